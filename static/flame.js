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

import { MERGED, packageOf, colorFor, nameColor, heatMaxOf, onPixelRatioChange } from './common.js';

/** Row height in CSS pixels. */
export const ROW = 18;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';
const MIN_WIDTH = 0.35; // frames narrower than this many CSS px are not drawn
const MAX_CANVAS_PX = 32000;

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
    // Per name: file index and line pairs, and the inlined flag (0 never,
    // 1 always, 2 at some call sites); absent from older or synthetic trees.
    this.files = json.files || [];
    this.src = json.src || [];
    this.inlined = json.inlined || [];
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
    // Per node, its total and self number of samples, when the sample type
    // is not a count (cpu nanoseconds, bytes): of countType's values, or of
    // sample records when countType is ''. Kept as parsed: only the
    // tooltip reads it.
    // valuePerSample R instead: every node's values are R times its counts.
    // counts is a string, read on first use (countsOf), so that the first
    // drawing does not wait for its numbers.
    this.countsText = typeof json.counts === 'string' ? json.counts : '';
    this.counts = null;
    this.valuePerSample = json.valuePerSample > 0 ? json.valuePerSample : 0;
    this.countType = typeof json.countType === 'string' ? json.countType : '';
  }

  /** Node i's sample count, {total, self}; null when the tree has none (its values are counts, or an older server). */
  countsOf(i) {
    if (!this.counts && this.countsText) {
      const c = this.countsText.split(',').map(Number);
      this.countsText = '';
      if (c.length === 2 * this.length && c.every(Number.isFinite)) this.counts = c;
    }
    if (this.counts) return { total: this.counts[2 * i], self: this.counts[2 * i + 1] };
    const r = this.valuePerSample;
    return r ? { total: Math.round(this.total[i] / r), self: Math.round(this.self[i] / r) } : null;
  }

  label(i) { return this.names[this.name[i]]; }

  mappingOf(i) { return this.mappingOfName(this.name[i]); }

  mappingOfName(nm) {
    const m = this.mapping[nm];
    return m === undefined || m < 0 ? '' : this.mappings[m] || '';
  }

  /** Node i's function's file:line ('' unknown) and inlined flag (0 no, 1 yes, 2 at some call sites, -1 unknown). */
  sourceOf(i) {
    const nm = this.name[i];
    const f = this.src[2 * nm];
    const line = this.src[2 * nm + 1];
    const file = f === undefined || f < 0 ? '' : this.files[f] || '';
    const inl = this.inlined[nm];
    return { file: file ? (line > 0 ? `${file}:${line}` : file) : '', inlined: inl === undefined ? -1 : inl };
  }

  /** Per name index: the self value summed over the tree (cached). */
  selfByName() {
    if (this.selfSum) return this.selfSum;
    const out = new Float64Array(this.names.length);
    for (let i = 0; i < this.length; i++) out[this.name[i]] += this.self[i];
    this.selfSum = out;
    return out;
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

// formatValue and formatPct are the twins of sampling.FormatValue and
// sampling.Percent (symbolize/sampling/values.go says the rules; web/browsertest/units_browser_plain_test.go
// checks both on one table). They compute on BigInt integers, as Go does on
// uint64, so that both round alike.
/**
 * Units of a scale: each [its size in the base unit, how many of it before
 * the next unit (0: the last), its name].
 * @typedef {[bigint, bigint, string][]} Steps
 */
/** @type {Steps} */
const TIME_STEPS = [[1n, 1000n, 'ns'], [1000n, 1000n, 'µs'], [1000000n, 1000n, 'ms'], [1000000000n, 120n, 's']];
/** @type {Steps} */
const BYTE_STEPS = [[1n, 1024n, 'B'], [1n << 10n, 1024n, 'KiB'], [1n << 20n, 1024n, 'MiB'], [1n << 30n, 1024n, 'GiB'], [1n << 40n, 0n, 'TiB']];
const POW10 = [1n, 10n, 100n, 1000n];
const MAX_U64 = (1n << 64n) - 1n;

/** Formats a value of the given pprof unit for people (sampling.FormatValue). */
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

/** x / d rounded to the nearest, halves up. @param {bigint} x @param {bigint} d */
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

/**
 * The one unit of a column of values (sampling.ColumnOf, whose twin this is):
 * for time and bytes, the largest unit the column's biggest value reaches
 * that keeps its smallest at 1/1000 or more; counts and other units as
 * formatValue writes them. Pass it to formatIn.
 */
export function columnUnit(unit, values) {
  const u = (unit || '').toLowerCase();
  const muls = {
    nanoseconds: 1n, nanosecond: 1n, ns: 1n, microseconds: 1000n, microsecond: 1000n, us: 1000n, 'µs': 1000n,
    milliseconds: 1000000n, millisecond: 1000000n, ms: 1000000n, seconds: 1000000000n, second: 1000000000n, s: 1000000000n,
  };
  let mul = muls[u];
  let steps = TIME_STEPS;
  if (['bytes', 'byte', 'b'].includes(u)) { mul = 1n; steps = BYTE_STEPS; }
  if (mul === undefined) return { unit, mul: 0n, div: 1n, name: '' };
  let lo = 0n;
  let hi = 0n;
  for (const v of values) {
    if (!isFinite(v)) continue;
    let a = BigInt(Math.round(v));
    if (a < 0n) a = -a;
    a *= mul;
    if (a === 0n) continue;
    if (lo === 0n || a < lo) lo = a;
    if (a > hi) hi = a;
  }
  let st = steps[0];
  for (const s of steps.slice(1)) if (s[0] <= hi && s[0] <= lo * 1000n) st = s;
  return { unit, mul, div: st[0], name: st[2] };
}

/** Writes v in a column's unit (columnUnit; sampling.Column.Format): 1.50 ms, 15.0 ms, 1,500 ms, 0.038 s, 0. */
export function formatIn(col, v) {
  if (col.mul === 0n) return formatValue(v, col.unit);
  if (!isFinite(v)) return '–';
  let a = BigInt(Math.round(v));
  if (a === 0n) return '0';
  const neg = a < 0n;
  if (neg) a = -a;
  a *= col.mul;
  const q = a / col.div;
  let d = col.div === 1n || q >= 100n ? 0 : q >= 10n ? 1 : q >= 1n ? 2 : 3; // ns and B are whole
  let r = roundDiv(a * POW10[d], col.div);
  while (d > 0 && r >= 1000n) {
    d--;
    r = roundDiv(a * POW10[d], col.div);
  }
  return `${neg ? '-' : ''}${fixed(r, d)} ${col.name}`;
}

/**
 * What values of a sample type measure, for a column's header
 * (views.Quantity): "CPU time", "Wall time", "Time", "Bytes", "Samples",
 * else the type's own name.
 */
export function quantity(type, unit) {
  const t = (type || '').toLowerCase();
  const u = (unit || '').toLowerCase();
  if (u === '' || u === 'count') return t === '' || t === 'samples' || t === 'sample' ? 'Samples' : type;
  if (['nanoseconds', 'nanosecond', 'ns', 'microseconds', 'microsecond', 'us', 'µs', 'milliseconds', 'millisecond', 'ms', 'seconds', 'second', 's'].includes(u)) {
    if (t.startsWith('cpu')) return 'CPU time';
    if (t === 'wall') return 'Wall time';
    return 'Time';
  }
  if (['bytes', 'byte', 'b'].includes(u)) return 'Bytes';
  return type || 'Value';
}

/** Formats a fraction as a percentage with two decimals, rounded half up (sampling.Percent). */
export function formatPct(frac) {
  if (!isFinite(frac)) return '–';
  return `${(frac * 100).toFixed(2)}%`;
}

/** Stable colour of a frame name by its package (common.js packageOf): [fill, faded fill]. */
export function frameColor(name, mapping) {
  const key = packageOf(name, mapping);
  return colorFor(key, key === MERGED || key === 'unsymbolized' ? '' : name);
}

const MATCH_COLOR = 'hsl(291 68% 66%)';
const WHEEL_STEP = 0.0015; // zoom factor per wheel pixel: e^(deltaY * step)
const SETTLE_MS = 120; // a wheel gesture's full drawing comes once it rests this long
const DRAG_PX = 4; // a press that moves less is a click or a tap
const DOUBLE_TAP_MS = 350;

/**
 * FlameGraph draws a Tree on a canvas inside container (which scrolls it
 * vertically). Zoom is the frame clicked (zoomTo, kept by path); within
 * it, view is the horizontal range shown, changed by the wheel (at the
 * pointer), drag and pinch, and reset by the next zoom.
 */
export class FlameGraph {
  constructor(container, canvas, overlay) {
    this.container = container;
    this.canvas = canvas;
    this.overlay = overlay;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.octx = overlay.getContext('2d');
    this.tree = null;
    this.mode = 'icicle'; // root at the top; 'flame' puts it at the bottom
    this.scheme = 'package'; // colors: 'package', 'binary' or 'heat' (common.js nameColor)
    this.zoomPath = []; // names below the root
    this.zoom = 0;
    this.view = null; // {x0, w} in value units within the zoomed frame; null: all of it
    this.re = null;
    this.matched = null;
    this.hover = -1;
    this.width = 0;
    this.fills = [];
    this.resetPalette(); // fills by index (paint), so a draw sets each color once
    this.textColors = ['#1d1410', '#5c5048']; // labels: normal, muted
    this.batch = null; // frames queued by a draw (frame, flush)
    this.nbatch = 0;
    this.charWidth = 7.2;
    this.onzoom = null; // (graph) => true when it draws the zoom itself
    this.onhover = null; // (graph, index, event) => void
    this.onselect = null; // (graph, path) => void: a frame was clicked or tapped twice
    this.ondraw = null; // (graph) => void: after every draw (the minimap follows)
    this.pending = 0;
    this.padTop = 0;
    this.resizeObserver = new ResizeObserver(() => this.schedule());
    this.resizeObserver.observe(container);
    onPixelRatioChange(() => this.schedule());
    container.addEventListener('scroll', () => this.schedule(), { passive: true });
    overlay.addEventListener('mousemove', (e) => { if (!this.press) this.pointer(e); });
    overlay.addEventListener('mouseleave', (e) => this.setHover(-1, e));
    overlay.addEventListener('click', (e) => {
      if (this.dragged || this.lastPointer === 'touch') return; // taps are handled on pointerup
      const i = this.frameAt(e.offsetX, e.offsetY);
      if (i >= 0) this.select(i);
    });
    overlay.tabIndex = 0;
    overlay.addEventListener('keydown', (e) => this.key(e));
    overlay.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    this.pointers = new Map(); // active pointers: id → {x, y}
    overlay.addEventListener('pointerdown', (e) => this.down(e));
    overlay.addEventListener('pointermove', (e) => this.move(e));
    for (const t of ['pointerup', 'pointercancel']) overlay.addEventListener(t, (e) => this.up(e));
  }

  /** A click (or double tap) on frame i: zoom into it and tell onselect. */
  select(i) {
    const path = this.tree.path(i);
    this.zoomTo(i); // may swap in another tree: tell onselect the path
    if (this.onselect) this.onselect(this, path);
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
      this.select(i);
      this.keyHover(i);
      return;
    } else if (e.key === '+' || e.key === '=' || e.key === '-') {
      e.preventDefault();
      this.zoomView(e.key === '-' ? 1.5 : 1 / 1.5, this.width / 2);
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
    this.view = null; // value offsets differ between trees
    this.recolor();
    this.zoom = tree.resolve(this.zoomPath);
    this.zoomPath = tree.path(this.zoom);
    this.matched = this.re ? tree.match(this.re) : null;
    this.setHover(-1); // the old index means nothing in the new tree
    this.draw();
  }

  /** Computes the per-name fills for the scheme. */
  recolor() {
    const t = this.tree;
    if (!t) return;
    // Per name, computed when first drawn (fills): a tree has many more
    // names than a drawing shows.
    this.fills = new Array(t.names.length);
    this.heatMax = this.scheme === 'heat' ? heatMaxOf(t) : 0;
    if (this.palette.length > 4096) this.resetPalette(); // bounded across many trees
    this.colorId = new Int32Array(t.names.length).fill(-1);
    this.dimId = new Int32Array(t.names.length).fill(-1);
    this.matchId = this.paint(MATCH_COLOR);
  }

  /** [fill, faded fill] of name index nm under the scheme. */
  fillsOf(nm) {
    return this.fills[nm] || (this.fills[nm] = nameColor(this.tree, nm, ['binary', 'heat'].includes(this.scheme) ? this.scheme : 'package', this.heatMax));
  }

  /** The fill of name index nm (a CSS color). */
  colorOf(nm) { return this.fillsOf(nm)[0]; }

  resetPalette() {
    this.palette = [];
    this.paletteAlpha = [];
    this.paintIds = new Map();
  }

  /** Colors frames by 'package', 'binary' or 'heat' (self share). */
  setScheme(scheme) {
    this.scheme = ['binary', 'heat'].includes(scheme) ? scheme : 'package';
    this.recolor();
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
    this.view = null;
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

  /** The horizontal range drawn: [first value, width in value units]. */
  range() {
    const t = this.tree;
    const z = this.zoom;
    return this.view ? [this.view.x0, this.view.w] : [t.x[z], t.total[z]];
  }

  /** Sets the range drawn within the zoomed frame, clamped; a range as wide as it clears view. */
  setView(x0, w) {
    const t = this.tree;
    const z = this.zoom;
    const full = t.total[z];
    if (!(full > 0)) return;
    w = Math.min(full, Math.max(w, full / 1e6));
    if (w >= full * 0.9999) {
      this.view = null;
    } else {
      x0 = Math.min(Math.max(x0, t.x[z]), t.x[z] + full - w);
      this.view = { x0, w };
    }
    this.schedule(this.inWheel);
  }

  /** Zooms the range by factor (below 1 zooms in) keeping the value under px (CSS px) in place. */
  zoomView(factor, px) {
    if (!this.tree || !this.width) return;
    const [vx, vw] = this.range();
    const v = vx + (px / this.width) * vw;
    const nw = vw * factor;
    this.setView(v - (px / this.width) * nw, nw);
  }

  /** Pans the range by dx CSS px (positive shows what is to the left). */
  panView(dx) {
    if (!this.tree || !this.view || !this.width) return;
    const [vx, vw] = this.range();
    this.setView(vx - (dx / this.width) * vw, vw);
  }

  // Wheel zooms at the pointer; horizontal wheel or Shift+wheel pans.
  wheel(e) {
    if (!this.tree) return;
    let dx = e.deltaX;
    let dy = e.deltaY;
    if (e.deltaMode === 1) { dx *= 16; dy *= 16; } else if (e.deltaMode === 2) { dx *= 400; dy *= 400; }
    e.preventDefault();
    if (e.shiftKey && !dx) { dx = dy; dy = 0; }
    if (Math.abs(dx) > Math.abs(dy)) {
      this.panView(-dx);
      return;
    }
    if (!this.wheelStart) this.wheelStart = performance.now(); // to the frame that draws it (benchmarks)
    this.gesture();
    this.inWheel = true;
    this.zoomView(Math.exp(dy * WHEEL_STEP * (e.ctrlKey ? 4 : 1)), e.offsetX);
    this.inWheel = false;
  }

  /**
   * A wheel zoom step: the first of a gesture keeps a copy of the rows
   * drawn, which the gesture's frames scale to the view (drawScaled, a
   * bitmap copy, whatever the tree); the full drawing follows once the
   * wheel rests for SETTLE_MS.
   */
  gesture() {
    if (!this.snap && this.band && this.width) {
      const [vx, vw] = this.range();
      const dpr = this.dpr || 1;
      const sy = Math.floor(this.band[0] * dpr);
      const sh = Math.min(Math.ceil(this.band[1] * dpr), this.canvas.height) - sy;
      if (sh > 0) {
        const c = this.snapCanvas || (this.snapCanvas = document.createElement('canvas'));
        if (c.width !== this.canvas.width || c.height !== sh) { c.width = this.canvas.width; c.height = sh; }
        const g = c.getContext('2d', { alpha: false });
        g.drawImage(this.canvas, 0, sy, this.canvas.width, sh, 0, 0, c.width, sh);
        this.snap = { vx, vw, sy, sh, tree: this.tree, zoom: this.zoom, mode: this.mode, width: this.width, height: this.canvas.height, scrollTop: this.container.scrollTop };
      }
    }
    clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => {
      this.settleTimer = 0;
      if (!this.snap) return;
      this.snap = null;
      const t0 = performance.now();
      this.draw();
      this.lastSettleMs = performance.now() - t0; // benchmarks
    }, SETTLE_MS);
  }

  /** Whether the gesture's copy still shows what a full drawing would, scaled. */
  snapValid() {
    const s = this.snap;
    return !!s && s.tree === this.tree && s.zoom === this.zoom && s.mode === this.mode && s.width === this.width &&
      s.height === this.canvas.height && s.scrollTop === this.container.scrollTop && !this.widthChanged();
  }

  widthChanged() { return Math.max(this.container.clientWidth, 100) !== this.width; }

  /**
   * A frame of a wheel gesture: the copy of the rows drawn when it began,
   * stretched horizontally from its range to the view's. The zoomed
   * frame's row and its ancestors' span the width whatever the view, so
   * they are copied as they are. Labels stretch with their frames until
   * the full drawing.
   */
  drawScaled() {
    const t0 = performance.now();
    const s = this.snap;
    const t = this.tree;
    const ctx = this.ctx;
    const W = this.canvas.width;
    const dpr = this.dpr || 1;
    const [vx, vw] = this.range();
    const k = s.vw / vw;
    const dx = ((s.vx - vx) / vw) * W;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, s.sy, W, s.sh);
    ctx.drawImage(this.snapCanvas, 0, 0, W, s.sh, dx, s.sy, W * k, s.sh);
    // Rows at and above the zoomed frame, unscaled.
    const d = t.depth[this.zoom] + 1;
    const y0 = Math.max(Math.round((this.mode === 'flame' ? this.rowTop(d - 1) : 0) * dpr), s.sy);
    const y1 = Math.min(Math.round((this.mode === 'flame' ? this.rowTop(0) + ROW : d * ROW) * dpr), s.sy + s.sh);
    if (y1 > y0) ctx.drawImage(this.snapCanvas, 0, y0 - s.sy, W, y1 - y0, 0, y0, W, y1 - y0);
    this.drawHover();
    this.lastDrawMs = performance.now() - t0;
    if (this.wheelStart) { this.lastWheelMs = performance.now() - this.wheelStart; this.wheelStart = 0; }
    this.lastWheelFrameMs = this.lastDrawMs;
    if (this.ondraw) this.ondraw(this);
  }

  // ---- pointer: drag to pan and scroll, taps, pinch ----

  down(e) {
    this.lastPointer = e.pointerType;
    if (e.pointerType === 'mouse' && e.button !== 0) return;
    this.overlay.setPointerCapture?.(e.pointerId);
    this.pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (this.pointers.size === 1) {
      this.press = { x: e.clientX, y: e.clientY, t: performance.now(), lastX: e.clientX, lastY: e.clientY, ox: e.offsetX, oy: e.offsetY };
      this.dragged = false;
    } else if (this.pointers.size === 2) {
      this.pinch = this.pinchState();
      this.dragged = true;
    }
  }

  pinchState() {
    const [a, b] = [...this.pointers.values()];
    const c = this.overlay.getBoundingClientRect();
    return { d: Math.hypot(a.x - b.x, a.y - b.y) || 1, mid: (a.x + b.x) / 2 - c.left };
  }

  move(e) {
    if (!this.pointers.has(e.pointerId)) return;
    this.pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (this.pinch && this.pointers.size >= 2) {
      const now = this.pinchState();
      this.zoomView(this.pinch.d / now.d, now.mid);
      this.pinch = now;
      return;
    }
    const p = this.press;
    if (!p) return;
    if (!this.dragged && Math.hypot(e.clientX - p.x, e.clientY - p.y) < DRAG_PX) return;
    if (!this.dragged) {
      this.dragged = true;
      this.setHover(-1, null);
      this.overlay.style.cursor = 'grabbing';
    }
    this.panView(e.clientX - p.lastX);
    this.container.scrollTop -= e.clientY - p.lastY;
    p.lastX = e.clientX;
    p.lastY = e.clientY;
  }

  up(e) {
    if (!this.pointers.has(e.pointerId)) return;
    this.pointers.delete(e.pointerId);
    if (this.pointers.size < 2) this.pinch = null;
    const p = this.press;
    if (this.pointers.size > 0) return;
    this.press = null;
    this.overlay.style.cursor = this.hover >= 0 ? 'pointer' : 'default';
    // The click after a drag is not a click.
    if (this.dragged) { setTimeout(() => { this.dragged = false; }, 0); return; }
    if (e.type !== 'pointerup' || e.pointerType === 'mouse' || !p) return;
    // Touch: a tap shows the tooltip, a second tap on the same frame zooms.
    const i = this.frameAt(p.ox, p.oy);
    const now = performance.now();
    const last = this.lastTap;
    if (i >= 0 && last && last.i === i && now - last.t < DOUBLE_TAP_MS) {
      this.lastTap = null;
      this.select(i);
      return;
    }
    this.lastTap = { i, t: now };
    this.setHover(i, e);
  }

  rows() { return this.tree ? this.tree.maxDepth + 1 : 0; }

  rowTop(d) { return this.mode === 'flame' ? this.padTop + (this.rows() - 1 - d) * ROW : d * ROW; }

  /** Draws at the next frame; scaled (drawScaled), when only a wheel gesture asked. */
  schedule(scaled = false) {
    if (!scaled) this.fullWanted = true;
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      const full = this.fullWanted || !this.snapValid();
      this.fullWanted = false;
      if (full) {
        const wheel = !!this.wheelStart;
        this.draw();
        if (wheel) this.lastWheelFrameMs = this.lastDrawMs;
      } else {
        this.drawScaled();
      }
    });
  }

  draw() {
    const t = this.tree;
    if (!t) return;
    const t0 = performance.now();
    const w = Math.max(this.container.clientWidth, 100);
    // Flame mode puts the root at the bottom of the box, however shallow the graph.
    const h = Math.max(this.rows() * ROW, this.mode === 'flame' ? this.container.clientHeight : 0);
    this.padTop = h - this.rows() * ROW;
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
    ctx.fillRect(0, 0, w, h); // (the band below would do, but a stale row must never show)
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    if (!this.charMeasured) { this.charWidth = ctx.measureText('M').width || 7.2; this.charMeasured = true; } // monospace, once

    const z = this.zoom;
    const [vx, vw] = this.range();
    const scale = vw > 0 ? w / vw : 0;
    const hit = this.matched ? this.matched.hit : null;
    // Only the rows the container shows (and a few more) are drawn: a
    // scroll draws again (constructor).
    const cont = this.container;
    const band0 = Math.max(0, cont.scrollTop - 4 * ROW);
    const band1 = Math.min(h, cont.scrollTop + Math.max(cont.clientHeight, ROW) + 4 * ROW);
    this.band = [band0, band1];
    const flame = this.mode === 'flame';
    // Frames are queued (frame), then filled one color at a time and
    // labelled one text color at a time (flush): setting fillStyle, which
    // parses the color, was most of a frame's cost.
    this.nbatch = 0;
    // Ancestors of the zoomed frame span the whole width, faded.
    for (let a = t.parent[z]; a >= 0; a = t.parent[a]) {
      const y = this.rowTop(t.depth[a]);
      if (y + ROW > band0 && y < band1) this.frame(ctx, a, 0, w, hit, true);
    }
    const drawn = []; // node indices drawn below the zoom, for tests and the console
    for (let i = z; i < t.end[z];) {
      const fw = t.total[i] * scale;
      if (fw < MIN_WIDTH) { i = t.end[i]; continue; }
      let x = (t.x[i] - vx) * scale;
      if (x >= w || x + fw <= 0) { i = t.end[i]; continue; } // outside the view: its subtree too
      const y = this.rowTop(t.depth[i]);
      // Past the band towards the leaves: so is the subtree.
      if (flame ? y + ROW <= band0 : y >= band1) { i = t.end[i]; continue; }
      if (flame ? y >= band1 : y + ROW <= band0) { i++; continue; } // rootward of the band: its children may show
      // Only the visible part, so the label sits where it can be read.
      const x1 = Math.min(x + fw, w);
      x = Math.max(x, 0);
      this.frame(ctx, i, x, x1 - x, hit, false);
      drawn.push(i);
      i++;
    }
    this.flush(ctx);
    if (this.snap) this.snap = null; // drawn again: a gesture copies this drawing
    this.drawn = drawn;
    this.drawHover();
    this.lastDrawMs = performance.now() - t0;
    if (this.wheelStart) { this.lastWheelMs = performance.now() - this.wheelStart; this.wheelStart = 0; }
    if (this.ondraw) this.ondraw(this);
  }

  /** Queues node i's frame at x, width w (CSS px), for flush. */
  frame(ctx, i, x, w, hit, faded) {
    let b = this.batch;
    const k = this.nbatch++;
    if (!b || k >= b.node.length) {
      const n = Math.max(1024, k * 2);
      const nb = { node: new Int32Array(n), x: new Float64Array(n), w: new Float64Array(n), fill: new Int32Array(n), muted: new Uint8Array(n) };
      if (b) for (const f of Object.keys(nb)) nb[f].set(b[f].subarray(0, k));
      this.batch = b = nb;
    }
    b.node[k] = i;
    b.x[k] = x;
    b.w[k] = w;
    b.fill[k] = this.fillId(i, hit, faded);
    b.muted[k] = this.muted(i, hit, faded) ? 1 : 0;
  }

  /** The palette index of node i's fill. */
  fillId(i, hit, faded) {
    const nm = this.tree.name[i];
    if (hit && hit[nm]) return this.matchId;
    if (hit || faded) {
      const id = this.dimId[nm];
      return id >= 0 ? id : (this.dimId[nm] = this.paint(this.fillsOf(nm)[1]));
    }
    const id = this.colorId[nm];
    return id >= 0 ? id : (this.colorId[nm] = this.paint(this.fillsOf(nm)[0]));
  }

  /** Whether node i's label is drawn muted (faded or not matching the search). */
  muted(i, hit, faded) {
    return faded || (hit && !hit[this.tree.name[i]]);
  }

  /** Palette index of fill c drawn at opacity alpha (interned per graph). */
  paint(c, alpha = 1) {
    const k = alpha === 1 ? c : `${c} ${alpha}`;
    let id = this.paintIds.get(k);
    if (id === undefined) {
      id = this.palette.length;
      this.palette.push(c);
      this.paletteAlpha.push(alpha);
      this.paintIds.set(k, id);
    }
    return id;
  }

  /** Draws the queued frames: their fills by color, then their labels. */
  flush(ctx) {
    const t = this.tree;
    const b = this.batch;
    const n = this.nbatch;
    if (!n) return;
    const np = this.palette.length;
    const start = new Int32Array(np + 1);
    for (let k = 0; k < n; k++) start[b.fill[k] + 1]++;
    for (let p = 0; p < np; p++) start[p + 1] += start[p];
    const order = new Int32Array(n);
    const at = start.slice(0, np);
    for (let k = 0; k < n; k++) order[at[b.fill[k]]++] = k;
    let alpha = 1;
    for (let p = 0; p < np; p++) {
      if (start[p] === start[p + 1]) continue;
      ctx.fillStyle = this.palette[p];
      if (this.paletteAlpha[p] !== alpha) ctx.globalAlpha = alpha = this.paletteAlpha[p];
      for (let j = start[p]; j < start[p + 1]; j++) {
        const k = order[j];
        const w = b.w[k];
        ctx.fillRect(b.x[k], this.rowTop(t.depth[b.node[k]]), w - (w >= 3 ? 1 : 0), ROW - 1);
      }
    }
    ctx.globalAlpha = 1;
    const cw = this.charWidth;
    const minW = cw * 3 + 6;
    for (let m = 0; m < 2; m++) {
      ctx.fillStyle = this.textColors[m];
      for (let k = 0; k < n; k++) {
        const w = b.w[k];
        if (b.muted[k] !== m || w < minW) continue;
        const i = b.node[k];
        const text = fitLabel(t.label(i), Math.floor((w - 6) / cw));
        if (text) ctx.fillText(text, b.x[k] + 3, this.rowTop(t.depth[i]) + ROW / 2);
      }
    }
  }

  /** The node under canvas coordinates (CSS px), or -1. */
  frameAt(px, py) {
    const t = this.tree;
    if (!t || px < 0 || px > this.width) return -1;
    const r = Math.floor((py - (this.mode === 'flame' ? this.padTop : 0)) / ROW);
    const d = this.mode === 'flame' ? this.rows() - 1 - r : r;
    if (d < 0 || d > t.maxDepth) return -1;
    const z = this.zoom;
    if (d <= t.depth[z]) {
      let a = z;
      while (t.depth[a] > d) a = t.parent[a];
      return a;
    }
    const [vx, vw] = this.range();
    const scale = this.width / vw;
    const v = vx + px / scale;
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

  /** Where node i is drawn (its visible part), in CSS px relative to the canvas, or null. */
  rectOf(i) {
    const t = this.tree;
    if (!t || i < 0) return null;
    const z = this.zoom;
    const y = this.rowTop(t.depth[i]);
    if (t.depth[i] <= t.depth[z]) return { x: 0, y, w: this.width, h: ROW - 1 };
    const [vx, vw] = this.range();
    const scale = this.width / vw;
    const x = (t.x[i] - vx) * scale;
    const w = t.total[i] * scale;
    if (x + w <= 0 || x >= this.width || w < MIN_WIDTH) return null;
    const x0 = Math.max(x, 0);
    return { x: x0, y, w: Math.min(x + w, this.width) - x0, h: ROW - 1 };
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

let mapTrees = 0; // ids of the trees a minimap drew

/**
 * Minimap: the zoomed frame's whole subtree, small, with the part the
 * graph shows outlined (the horizontal view and the rows scrolled into
 * the container). Shown only when the graph is deeper than its box or
 * zoomed in horizontally; clicking or dragging in it moves there.
 */
export class Minimap {
  constructor(graph, canvas) {
    this.graph = graph;
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d');
    this.image = null; // offscreen drawing of the subtree, and what it was drawn for
    this.key = null;
    graph.container.addEventListener('scroll', () => this.draw(), { passive: true });
    const to = (e) => {
      const g = this.graph;
      const t = g.tree;
      if (!t) return;
      const r = canvas.getBoundingClientRect();
      const fx = (e.clientX - r.left) / r.width;
      const fy = (e.clientY - r.top) / r.height;
      const z = g.zoom;
      const [, vw] = g.range();
      if (g.view) g.setView(t.x[z] + fx * t.total[z] - vw / 2, vw);
      const c = g.container;
      const rowsY = fy * g.rows() * ROW;
      c.scrollTop = rowsY - c.clientHeight / 2;
    };
    canvas.addEventListener('pointerdown', (e) => {
      canvas.setPointerCapture?.(e.pointerId);
      this.dragging = true;
      to(e);
    });
    canvas.addEventListener('pointermove', (e) => { if (this.dragging) to(e); });
    canvas.addEventListener('pointerup', () => { this.dragging = false; });
  }

  /** Whether the graph needs a map: deeper than its box, or zoomed in horizontally. */
  needed() {
    const g = this.graph;
    return !!g.tree && (g.view !== null || g.rows() * ROW > g.container.clientHeight + 1);
  }

  draw() {
    const g = this.graph;
    const show = this.needed();
    this.canvas.hidden = !show;
    if (!show) return;
    const t = g.tree;
    const cw = this.canvas.clientWidth || 160;
    const ch = this.canvas.clientHeight || 96;
    const dpr = window.devicePixelRatio || 1;
    const pw = Math.round(cw * dpr);
    const ph = Math.round(ch * dpr);
    if (!t.mapID) t.mapID = ++mapTrees;
    const key = [t.mapID, g.zoom, g.mode, g.scheme, pw, ph, g.fills.length].join(' ');
    if (key !== this.key || !this.image) {
      this.image = this.render(pw, ph);
      this.key = key;
    }
    const c = this.ctx;
    if (this.canvas.width !== pw || this.canvas.height !== ph) { this.canvas.width = pw; this.canvas.height = ph; }
    c.setTransform(1, 0, 0, 1, 0, 0);
    c.drawImage(this.image, 0, 0);
    // The part shown.
    const z = g.zoom;
    const [vx, vw] = g.range();
    const x = ((vx - t.x[z]) / t.total[z]) * pw;
    const w = Math.max((vw / t.total[z]) * pw, 2);
    const total = Math.max(g.rows() * ROW + g.padTop, 1);
    const cont = g.container;
    const top = (cont.scrollTop / total) * ph;
    const h = Math.max((Math.min(cont.clientHeight, total) / total) * ph, 2);
    c.strokeStyle = '#1d1410';
    c.lineWidth = Math.max(1, dpr);
    c.fillStyle = 'rgba(29, 20, 16, 0.12)';
    c.fillRect(x, top, w, h);
    c.strokeRect(x + 0.5, top + 0.5, w - 1, h - 1);
  }

  // render draws the zoomed subtree (frames at least a device pixel wide)
  // on an offscreen canvas of pw × ph.
  render(pw, ph) {
    const g = this.graph;
    const t = g.tree;
    const off = document.createElement('canvas');
    off.width = pw;
    off.height = ph;
    const c = off.getContext('2d', { alpha: false });
    c.fillStyle = '#fff';
    c.fillRect(0, 0, pw, ph);
    const z = g.zoom;
    const rows = g.rows();
    const rh = ph / rows;
    const scale = t.total[z] > 0 ? pw / t.total[z] : 0;
    for (let i = z; i < t.end[z];) {
      const fw = t.total[i] * scale;
      if (fw < 1) { i = t.end[i]; continue; }
      const d = t.depth[i];
      const y = g.mode === 'flame' ? (rows - 1 - d) * rh : d * rh;
      c.fillStyle = g.colorOf(t.name[i]);
      c.fillRect((t.x[i] - t.x[z]) * scale, y, Math.max(fw - (fw > 3 ? 1 : 0), 1), Math.max(rh, 1));
      i++;
    }
    return off;
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
