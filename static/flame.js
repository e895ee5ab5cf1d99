// flame.js: the flame graph model (Tree) and its canvas renderer (FlameGraph).
//
// The server sends flame.json: a pre-order list of nodes as flat ints
// [nameIdx, depth, total, self, ...]. Tree turns that into typed arrays with
// each node's horizontal offset and subtree end, so drawing, hit testing and
// search are plain loops that skip whole subtrees, and a tree of 200k nodes
// costs a few MB. FlameGraph draws only frames wider than a fraction of a
// pixel, on one canvas, with a second canvas on top for the hover outline.
//
// Zoom is kept as a path of names from the root, never node indices, so that a
// reloaded tree (other sample type, names arriving from symbolization) keeps
// the zoom: setTree re-resolves the path as far as it still exists. A merged
// "…" frame's element is "…<minTotal" (the children under the threshold of
// the tree that drew it), which the server resolves too (flame.json?z=).

/** Row height in CSS pixels. */
export const ROW = 18;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';
const MIN_WIDTH = 0.35; // frames narrower than this many CSS px are not drawn
const MERGED = '…';
const MAX_CANVAS_PX = 32000;
const UNSYMBOLIZED = /\+0x[0-9a-f]+$/i;

/** Tree is the parsed flame.json. */
export class Tree {
  constructor(json) {
    if (!json || !Array.isArray(json.names) || !Array.isArray(json.nodes) || json.nodes.length % 4 !== 0 || json.nodes.length === 0) {
      throw new Error('flame.json: malformed tree (names and nodes are required; nodes come in groups of 4)');
    }
    this.version = json.version;
    this.sampleType = json.sampleType || '';
    this.unit = json.unit || '';
    this.names = json.names;
    this.mapping = json.mapping || [];
    this.mappings = json.mappings || [];
    // A zoomed tree starts with the chain root > ... > zoomed frame, one
    // node per element of zoom; minTotal is its compaction threshold.
    this.zoom = Array.isArray(json.zoom) ? json.zoom : [];
    this.minTotal = json.minTotal || 0;
    const flat = json.nodes;
    const n = flat.length / 4;
    this.length = n;
    this.name = new Int32Array(n);
    this.depth = new Int32Array(n);
    this.total = new Float64Array(n);
    this.self = new Float64Array(n);
    this.x = new Float64Array(n); // offset from the root's left edge, in value units
    this.parent = new Int32Array(n);
    this.end = new Int32Array(n); // subtree of i is [i, end[i])
    const stack = []; // open ancestors, by depth
    const cursor = [0]; // next child offset, by depth
    let maxDepth = 0;
    for (let i = 0; i < n; i++) {
      const d = flat[i * 4 + 1];
      this.name[i] = flat[i * 4];
      this.depth[i] = d;
      this.total[i] = flat[i * 4 + 2];
      this.self[i] = flat[i * 4 + 3];
      if (i === 0 ? d !== 0 : d < 1 || d > stack.length) {
        throw new Error(`flame.json: node ${i} has depth ${d} after depth ${stack.length - 1}`);
      }
      while (stack.length > d) this.end[stack.pop()] = i;
      this.parent[i] = d === 0 ? -1 : stack[d - 1];
      const x = d === 0 ? 0 : cursor[d];
      this.x[i] = x;
      cursor[d] = x + this.total[i];
      cursor[d + 1] = x;
      stack.push(i);
      if (d > maxDepth) maxDepth = d;
    }
    while (stack.length) this.end[stack.pop()] = n;
    this.maxDepth = maxDepth;
    this.rootTotal = this.total[0] || json.total || 0;
  }

  label(i) { return this.names[this.name[i]]; }

  mappingOf(i) {
    const m = this.mapping[this.name[i]];
    return m === undefined || m < 0 ? '' : this.mappings[m] || '';
  }

  /** The zoom path element of node i: its name, "…<minTotal" for a merged block. */
  key(i) {
    if (i > 0 && i <= this.zoom.length && this.depth[i] === i) return this.zoom[i - 1];
    const l = this.label(i);
    return l === MERGED ? `${MERGED}<${this.minTotal}` : l;
  }

  /** Zoom path elements from the root (excluded) down to i. */
  path(i) {
    const out = [];
    for (; i > 0; i = this.parent[i]) out.push(this.key(i));
    return out.reverse();
  }

  /** The deepest node reached by following path from the root. */
  resolve(path) {
    let i = 0;
    for (const want of path || []) {
      let found = -1;
      for (let j = i + 1; j < this.end[i]; j = this.end[j]) {
        if (this.key(j) === want) { found = j; break; }
      }
      if (found < 0) break;
      i = found;
    }
    return i;
  }

  /** Whether the subtree of i has merged frames, which a finer tree would show. */
  hasMerged(i) {
    for (let j = i; j < this.end[i]; j++) if (this.label(j) === MERGED) return true;
    return false;
  }

  /** Ancestors of i from the root down, i included. */
  ancestry(i) {
    const out = [];
    for (; i >= 0; i = this.parent[i]) out.push(i);
    return out.reverse();
  }

  /**
   * Per-name flat (self) and cumulative totals over the subtree of root, for
   * pages whose server has no top.json (the data-type flame graph). Cumulative
   * counts a name once per stack, so recursion is not double counted. Root
   * and merged "…" frames are left out.
   */
  topFunctions(root = 0) {
    const k = this.names.length;
    const flat = new Float64Array(k);
    const cum = new Float64Array(k);
    const onStack = new Int32Array(k);
    const stack = [];
    const base = this.depth[root];
    for (let i = root; i < this.end[root]; i++) {
      const d = this.depth[i] - base;
      while (stack.length > d) onStack[stack.pop()]--;
      const nm = this.name[i];
      flat[nm] += this.self[i];
      if (onStack[nm] === 0) cum[nm] += this.total[i];
      onStack[nm]++;
      stack.push(nm);
    }
    const rows = [];
    for (let nm = 0; nm < k; nm++) {
      if (cum[nm] === 0 && flat[nm] === 0) continue;
      const label = this.names[nm];
      if (label === MERGED || nm === this.name[0]) continue; // the root is not a function
      rows.push({ name: label, flat: flat[nm], cum: cum[nm] });
    }
    return rows;
  }

  /**
   * Marks names matching re and sums the totals of matching nodes that are not
   * nested under another match, so the share never exceeds 100%.
   */
  match(re) {
    const hit = new Uint8Array(this.names.length);
    if (!re) return { hit, value: 0, frames: 0 };
    for (let nm = 0; nm < this.names.length; nm++) {
      re.lastIndex = 0;
      if (re.test(this.names[nm])) hit[nm] = 1;
    }
    let value = 0;
    let frames = 0;
    for (let i = 0; i < this.length;) {
      if (hit[this.name[i]]) {
        value += this.total[i];
        for (let j = i; j < this.end[i]; j++) if (hit[this.name[j]]) frames++;
        i = this.end[i];
      } else {
        i++;
      }
    }
    return { hit, value, frames };
  }
}

// formatValue and formatPct are the twins of views.FormatValue and
// views.Percent (views/units.go says the rules; web/units_browser_test.go
// checks both on one table). They compute on BigInt integers, as Go does on
// uint64, so that both round alike.
const TIME_STEPS = [[1n, 1000n, 'ns'], [1000n, 1000n, 'µs'], [1000000n, 1000n, 'ms'], [1000000000n, 120n, 's']];
const BYTE_STEPS = [[1n, 1024n, 'B'], [1n << 10n, 1024n, 'KiB'], [1n << 20n, 1024n, 'MiB'], [1n << 30n, 1024n, 'GiB'], [1n << 40n, 0n, 'TiB']];
const POW10 = [1n, 10n, 100n];
const MAX_U64 = (1n << 64n) - 1n;

/** Formats a value of the given pprof unit for people (views.FormatValue). */
export function formatValue(v, unit) {
  if (!isFinite(v)) return '–';
  let a = BigInt(Math.round(v));
  const neg = a < 0n;
  if (neg) a = -a;
  const u = (unit || '').toLowerCase();
  const mul = (k) => (a * k > MAX_U64 ? MAX_U64 : a * k);
  let s;
  switch (u) {
    case 'nanoseconds': case 'nanosecond': case 'ns': s = formatNanos(a); break;
    case 'microseconds': case 'microsecond': case 'us': case 'µs': s = formatNanos(mul(1000n)); break;
    case 'milliseconds': case 'millisecond': case 'ms': s = formatNanos(mul(1000000n)); break;
    case 'seconds': case 'second': case 's': s = formatNanos(mul(1000000000n)); break;
    case 'bytes': case 'byte': case 'b': s = scaled(a, BYTE_STEPS)[0]; break;
    case 'count': case '': s = group(a.toString()); break;
    default: s = `${group(a.toString())} ${unit}`;
  }
  return neg ? `-${s}` : s;
}

function scaled(a, steps) {
  let i = 0;
  while (i + 1 < steps.length && a >= steps[i + 1][0]) i++;
  for (;;) {
    const [div, limit, name] = steps[i];
    let r = a;
    let d = 0;
    if (div > 1n) {
      const q = a / div;
      d = q >= 100n ? 0 : q >= 10n ? 1 : 2;
      r = roundDiv(a * POW10[d], div);
      while (d > 0 && r >= 1000n) {
        d--;
        r = roundDiv(a * POW10[d], div);
      }
    }
    if (limit > 0n && r >= limit * POW10[d]) {
      if (i + 1 === steps.length) return ['', true];
      i++;
      continue;
    }
    return [`${fixed(r, d)} ${name}`, false];
  }
}

function formatNanos(ns) {
  const [s, over] = scaled(ns, TIME_STEPS);
  if (!over) return s;
  const sec = roundDiv(ns, 1000000000n);
  const m = sec / 60n;
  if (m < 120n) return `${m} min ${sec % 60n} s`;
  return `${fixed(roundDiv(ns, 360000000000n), 1)} h`;
}

function roundDiv(x, d) {
  const q = x / d;
  return x % d >= d - x % d ? q + 1n : q;
}

function fixed(r, d) {
  const s = group((r / POW10[d]).toString());
  return d === 0 ? s : `${s}.${(r % POW10[d] + POW10[d]).toString().slice(1)}`;
}

function group(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Formats a fraction as a percentage with two decimals, rounded half up (views.Percent). */
export function formatPct(frac) {
  if (!isFinite(frac)) return '–';
  return `${(frac * 100).toFixed(2)}%`;
}

// FNV-1a, so a name gets the same colour in every profile and every session.
function hash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Stable warm colour for a frame name; grey for merged, blue-grey for raw addresses. */
export function frameColor(name) {
  if (name === MERGED) return ['hsl(30 6% 78%)', 'hsl(30 6% 88%)'];
  const h = hash(name);
  if (UNSYMBOLIZED.test(name)) {
    const l = 70 + (h % 10);
    return [`hsl(215 18% ${l}%)`, `hsl(215 10% ${Math.min(l + 12, 92)}%)`];
  }
  const hue = 4 + (h % 47); // red .. amber
  const sat = 72 + ((h >>> 8) % 22);
  const light = 56 + ((h >>> 16) % 14);
  return [`hsl(${hue} ${sat}% ${light}%)`, `hsl(${hue} 22% ${Math.min(light + 22, 90)}%)`];
}

const MATCH_COLOR = 'hsl(291 68% 66%)';

/** FlameGraph draws a Tree on a canvas inside container. */
export class FlameGraph {
  constructor(container, canvas, overlay) {
    this.container = container;
    this.canvas = canvas;
    this.overlay = overlay;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.octx = overlay.getContext('2d');
    this.tree = null;
    this.mode = 'icicle'; // root at the top; 'flame' puts it at the bottom
    this.zoomPath = []; // names below the root
    this.zoom = 0;
    this.re = null;
    this.matched = null;
    this.hover = -1;
    this.width = 0;
    this.colors = [];
    this.dimColors = [];
    this.charWidth = 7.2;
    this.onzoom = null; // (graph) => true when it draws the zoom itself
    this.onhover = null; // (graph, index, event) => void
    this.pending = 0;
    this.resizeObserver = new ResizeObserver(() => this.schedule());
    this.resizeObserver.observe(container);
    overlay.addEventListener('mousemove', (e) => this.pointer(e));
    overlay.addEventListener('mouseleave', (e) => this.setHover(-1, e));
    overlay.addEventListener('click', (e) => {
      const i = this.frameAt(e.offsetX, e.offsetY);
      if (i >= 0) this.zoomTo(i);
    });
    overlay.tabIndex = 0;
    overlay.addEventListener('keydown', (e) => this.key(e));
  }

  /**
   * Keyboard: arrows move between frames (towards the leaves picks the
   * widest child), Enter or Space zooms into the selected frame.
   */
  key(e) {
    const t = this.tree;
    if (!t || e.ctrlKey || e.metaKey || e.altKey) return;
    let i = this.hover >= 0 ? this.hover : this.zoom;
    const leafward = this.mode === 'flame' ? 'ArrowUp' : 'ArrowDown';
    const rootward = this.mode === 'flame' ? 'ArrowDown' : 'ArrowUp';
    let next = -1;
    if (e.key === leafward) {
      let best = -1;
      for (let j = i + 1; j < t.end[i]; j = t.end[j]) if (best < 0 || t.total[j] > t.total[best]) best = j;
      next = best;
    } else if (e.key === rootward) {
      next = t.parent[i];
    } else if (e.key === 'ArrowRight') {
      const p = t.parent[i];
      if (p >= 0 && t.end[i] < t.end[p]) next = t.end[i];
    } else if (e.key === 'ArrowLeft') {
      const p = t.parent[i];
      if (p >= 0) for (let j = p + 1; j < i; j = t.end[j]) next = j;
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      this.zoomTo(i);
      this.keyHover(i);
      return;
    } else {
      return;
    }
    e.preventDefault();
    if (next >= 0 && this.rectOf(next)) this.keyHover(next);
  }

  keyHover(i) {
    const r = this.rectOf(i);
    if (!r) return;
    const c = this.overlay.getBoundingClientRect();
    const x = Math.max(0, r.x) + Math.min(r.w, this.width) / 2;
    this.setHover(i, { clientX: c.left + Math.min(x, this.width - 1), clientY: c.top + r.y + r.h });
  }

  /** Replaces the tree, keeping zoom (by names) and search. */
  setTree(tree) {
    this.tree = tree;
    this.colors = new Array(tree.names.length);
    this.dimColors = new Array(tree.names.length);
    for (let nm = 0; nm < tree.names.length; nm++) {
      [this.colors[nm], this.dimColors[nm]] = frameColor(tree.names[nm]);
    }
    this.zoom = tree.resolve(this.zoomPath);
    this.zoomPath = tree.path(this.zoom);
    this.matched = this.re ? tree.match(this.re) : null;
    this.setHover(-1); // the old index means nothing in the new tree
    this.draw();
  }

  setMode(mode) {
    this.mode = mode === 'flame' ? 'flame' : 'icicle';
    this.draw();
  }

  /** Sets the search (a RegExp or null) and returns the match summary. */
  setSearch(re) {
    this.re = re;
    this.matched = this.tree && re ? this.tree.match(re) : null;
    this.draw();
    return this.matched;
  }

  zoomTo(i) {
    if (!this.tree) return;
    this.zoom = i;
    this.zoomPath = this.tree.path(i);
    this.setHover(-1);
    // onzoom first: it may swap in a kept tree, or fetch a finer one and
    // return true to draw it when it arrives (drawing this one meanwhile
    // would hold the page's thread the fetched tree waits for).
    const t = this.tree;
    const later = this.onzoom ? this.onzoom(this) === true : false;
    if (this.tree === t && !later) this.draw();
  }

  zoomToPath(path) {
    this.zoomPath = path || [];
    if (this.tree) this.zoomTo(this.tree.resolve(this.zoomPath));
  }

  rows() { return this.tree ? this.tree.maxDepth + 1 : 0; }

  rowTop(d) { return this.mode === 'flame' ? (this.rows() - 1 - d) * ROW : d * ROW; }

  schedule() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => { this.pending = 0; this.draw(); });
  }

  draw() {
    const t = this.tree;
    if (!t) return;
    const t0 = performance.now();
    const w = Math.max(this.container.clientWidth, 100);
    const h = this.rows() * ROW;
    // Canvases stop drawing past 32767 device px a side: very deep stacks
    // get a lower resolution rather than a blank graph.
    const dpr = Math.min(window.devicePixelRatio || 1, MAX_CANVAS_PX / h);
    this.dpr = dpr;
    this.width = w;
    for (const c of [this.canvas, this.overlay]) {
      const pw = Math.round(w * dpr);
      const ph = Math.round(h * dpr);
      if (c.width !== pw || c.height !== ph) { c.width = pw; c.height = ph; }
      c.style.width = `${w}px`;
      c.style.height = `${h}px`;
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, w, h);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    this.charWidth = ctx.measureText('M').width || 7.2;

    const z = this.zoom;
    const vx = t.x[z];
    const scale = t.total[z] > 0 ? w / t.total[z] : 0;
    const hit = this.matched ? this.matched.hit : null;
    // Ancestors of the zoomed frame span the whole width, faded.
    for (let a = t.parent[z]; a >= 0; a = t.parent[a]) {
      this.frame(ctx, a, 0, w, hit, true);
    }
    const drawn = []; // node indices drawn below the zoom, for tests and the console
    for (let i = z; i < t.end[z];) {
      const fw = t.total[i] * scale;
      if (fw < MIN_WIDTH) { i = t.end[i]; continue; }
      this.frame(ctx, i, (t.x[i] - vx) * scale, fw, hit, false);
      drawn.push(i);
      i++;
    }
    this.drawn = drawn;
    this.drawHover();
    this.lastDrawMs = performance.now() - t0;
  }

  frame(ctx, i, x, w, hit, faded) {
    const t = this.tree;
    const nm = t.name[i];
    const y = this.rowTop(t.depth[i]);
    let color;
    if (hit) color = hit[nm] ? MATCH_COLOR : this.dimColors[nm];
    else color = faded ? this.dimColors[nm] : this.colors[nm];
    ctx.fillStyle = color;
    const gap = w >= 3 ? 1 : 0;
    ctx.fillRect(x, y, w - gap, ROW - 1);
    if (w < this.charWidth * 3 + 6) return;
    const text = fitLabel(t.names[nm], Math.floor((w - 6) / this.charWidth));
    if (!text) return;
    ctx.fillStyle = faded || (hit && !hit[nm]) ? '#6b5f57' : '#1d1410';
    ctx.fillText(text, x + 3, y + ROW / 2);
  }

  /** The node under canvas coordinates (CSS px), or -1. */
  frameAt(px, py) {
    const t = this.tree;
    if (!t || px < 0 || px > this.width) return -1;
    const r = Math.floor(py / ROW);
    const d = this.mode === 'flame' ? this.rows() - 1 - r : r;
    if (d < 0 || d > t.maxDepth) return -1;
    const z = this.zoom;
    if (d <= t.depth[z]) {
      let a = z;
      while (t.depth[a] > d) a = t.parent[a];
      return a;
    }
    const scale = this.width / t.total[z];
    const v = t.x[z] + px / scale;
    let i = z;
    while (t.depth[i] < d) {
      let next = -1;
      for (let j = i + 1; j < t.end[i]; j = t.end[j]) {
        if (v >= t.x[j] && v < t.x[j] + t.total[j]) { next = j; break; }
      }
      if (next < 0) return -1;
      i = next;
    }
    return t.total[i] * scale >= MIN_WIDTH ? i : -1;
  }

  /** Where node i is drawn, in CSS px relative to the canvas, or null. */
  rectOf(i) {
    const t = this.tree;
    if (!t || i < 0) return null;
    const z = this.zoom;
    const scale = this.width / t.total[z];
    const y = this.rowTop(t.depth[i]);
    if (t.depth[i] <= t.depth[z]) return { x: 0, y, w: this.width, h: ROW - 1 };
    const x = (t.x[i] - t.x[z]) * scale;
    const w = t.total[i] * scale;
    if (x + w <= 0 || x >= this.width || w < MIN_WIDTH) return null;
    return { x, y, w, h: ROW - 1 };
  }

  pointer(e) {
    const i = this.frameAt(e.offsetX, e.offsetY);
    this.setHover(i, e);
  }

  setHover(i, e) {
    if (i !== this.hover) {
      this.hover = i;
      this.overlay.style.cursor = i >= 0 ? 'pointer' : 'default';
      this.drawHover();
    }
    if (this.onhover) this.onhover(this, i, e);
  }

  drawHover() {
    const c = this.octx;
    const dpr = this.dpr || 1;
    c.setTransform(1, 0, 0, 1, 0, 0);
    c.clearRect(0, 0, this.overlay.width, this.overlay.height);
    const r = this.rectOf(this.hover);
    if (!r) return;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.strokeStyle = '#1d1410';
    c.lineWidth = 1.5;
    c.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(r.w - 2.5, 1), r.h - 1.5);
  }
}

/**
 * Fits a frame label into max characters: the whole name, else without its
 * package path (after the last "/"), else truncated with an ellipsis.
 */
export function fitLabel(name, max) {
  if (max < 2) return '';
  if (name.length <= max) return name;
  const slash = name.lastIndexOf('/', name.indexOf('(') > 0 ? name.indexOf('(') : name.length);
  const short = slash >= 0 ? name.slice(slash + 1) : name;
  if (short.length <= max) return short;
  return short.slice(0, max - 1) + '…';
}
