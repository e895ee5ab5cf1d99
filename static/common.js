// common.js: the code every page script shares (the flame graph, diff,
// sandwich and data-type pages). Modules import what they need from here and
// talk to each other through exported functions or DOM events named
// "viewer:*" (on), never through window globals: window.viewer is left for
// tests and the console.
//
// API (all pure or DOM-local; nothing runs on import):
//
//	$(id)                       document.getElementById
//	readConfig(id)              the page's JSON config script element, parsed
//	getJSON(url, {revalidate, marks})  fetch + JSON, errors name the status and the server's message
//	responseError(resp)         what a failed response says: its JSON {"error", "heading"}, else its text
//	escapeRE(s), compileSearch(q)      a case-insensitive RegExp; invalid regex text is matched literally
//	wireCopyLink(button, before)       "Copy link" with the current URL (before() runs first)
//	tooltipRow(label, value, pct)      one label/value/share row of a tooltip
//	placeTooltip(tip, e)               puts tip (position: fixed) beside the pointer, inside the window
//	frameLinks(name, base, mapping)    [{label, href, title}] to sandwich, source, annotate, focus, ignore, hide
//	                                   (a data type's: the data-type page and the filters; DATA_TYPE_MAPPING)
//	withParam(url, key, value)         url with one query parameter set, or removed when value is ''
//	keepNav(key, value)                the header's view links that follow key (data-keep) set to value
//	packageOf(name, mapping)           the color group of a frame: Go package, C++ namespace, Rust crate or binary
//	colorFor(key, name), heatColor(r), diffColor(r)   fills; UNSYMBOLIZED_COLOR, MERGED_COLOR
//	nameColors(tree, scheme)           per name: [fill, faded fill] for scheme 'package' | 'binary' | 'heat'
//	nameColor(tree, nm, scheme, max)   the same for one name (heatMaxOf(tree) gives heat's max)
//	legendEntries(tree, scheme, n)     the n widest groups of the scheme, for a legend
//	renderLegend(el, entries, scheme)  draws those entries as the legend row (package paths shortened, names.js)
//	fitToWindow(chart, above)          the graph's pane sized to the window (flame and diff pages)
//	emit(type, detail), on(type, fn)   document-level "viewer:TYPE" CustomEvents

import { packageLabels } from './names.js';

export const $ = (id) => document.getElementById(id);

/** The page's config: the JSON script element with this id, parsed ({} when absent). */
export function readConfig(id) {
  const el = $(id);
  return el ? JSON.parse(el.textContent) : {};
}

/**
 * Fetches url as JSON. revalidate asks the server again (names may have
 * changed); marks, when given, gets the times the headers, the text and
 * the parsed JSON arrived (for benchmarks).
 */
export async function getJSON(url, { revalidate = false, marks = null } = {}) {
  const resp = await fetch(url, { headers: { Accept: 'application/json' }, cache: revalidate ? 'no-cache' : 'default' });
  if (marks) marks.headers = performance.now();
  if (!resp.ok) {
    const msg = await responseError(resp);
    throw new Error(`${resp.status} ${resp.statusText}${msg ? `: ${msg}` : ''}`);
  }
  if (!marks) return resp.json();
  const text = await resp.text();
  marks.text = performance.now();
  const json = JSON.parse(text);
  marks.parsed = performance.now();
  return json;
}

/**
 * What a failed response says: the server answers the JSON requests of
 * pages with {"error", "heading"} (web/render.go): the heading, when it
 * names the cause, then the message; any other body's first 300 characters.
 */
export async function responseError(resp) {
  const text = (await resp.text()).trim();
  if ((resp.headers.get('Content-Type') || '').includes('application/json')) {
    try {
      const j = JSON.parse(text);
      if (j && typeof j.error === 'string') return j.heading ? `${j.heading}: ${j.error}` : j.error;
    } catch {
      // not the server's error: its text below
    }
  }
  return text.slice(0, 300);
}

export function escapeRE(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

/** A case-insensitive RegExp for q; text that is not a valid regex is matched literally. */
export function compileSearch(q) {
  if (!q) return null;
  try {
    return new RegExp(q, 'i');
  } catch {
    return new RegExp(escapeRE(q), 'i');
  }
}

/** Makes button copy the page's URL (after before(), which may update it), saying "Copied". */
export function wireCopyLink(button, before) {
  if (!button) return;
  const label = button.textContent;
  let timer = 0;
  button.addEventListener('click', async () => {
    if (before) before();
    let ok = false;
    try {
      await navigator.clipboard.writeText(location.href);
      ok = true;
    } catch {
      // No clipboard (plain http on another host): select the URL instead.
      const input = document.createElement('input');
      input.value = location.href;
      document.body.append(input);
      input.select();
      ok = document.execCommand('copy');
      input.remove();
    }
    button.textContent = ok ? 'Copied' : 'Copy failed';
    clearTimeout(timer);
    timer = setTimeout(() => { button.textContent = label; }, 1500);
  });
}

/** One row of a tooltip or detail strip: label, value and (optional) share. */
export function tooltipRow(label, value, pct) {
  const r = document.createElement('div');
  r.className = 'tt-row';
  for (const [cls, text] of [['tt-label', label], ['tt-value', value], ['tt-pct', pct || '']]) {
    const s = document.createElement('span');
    s.className = cls;
    s.textContent = text;
    r.append(s);
  }
  return r;
}

/** Places tip (position: fixed) beside the pointer event e, kept inside the window. */
export function placeTooltip(tip, e) {
  const tw = tip.offsetWidth;
  const th = tip.offsetHeight;
  let x = e.clientX + 14;
  let y = e.clientY + 16;
  if (x + tw > window.innerWidth - 4) x = Math.max(4, Math.min(e.clientX - tw - 14, window.innerWidth - tw - 4));
  if (y + th > window.innerHeight - 4) y = Math.max(4, e.clientY - th - 12);
  tip.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
}

/**
 * The pages about one function, keeping si, the filters and the time
 * range (t) of the current URL: base is the page's path. Sandwich, source
 * and annotate are the profile's (/p/ID); focus, ignore and hide filter
 * the graph shown, the profile's or the data-type flame graph
 * (/p/ID/types/flame, which keeps its skid choice too, as annotate does;
 * the profile's pages get the filters of its header's links). A frame of
 * mapping DATA_TYPE_MAPPING (a data type or member there) links to the
 * data-type page instead of a function's pages.
 */
export function frameLinks(name, base = location.pathname, mapping = '') {
  const cur = new URLSearchParams(location.search);
  const graphPath = base.replace(/\/(sandwich|source|annotate|top)$/, '').replace(/\/+$/, '');
  const root = graphPath.replace(/\/types\/flame$/, '');
  // On the data-type flame graph, the profile's pages get the filters its
  // header's Flame graph link carries (none that matches a type or member
  // frame, which the profile lacks: web/datatypes.go profileFilterQuery),
  // and annotate its skid choice.
  const onTypes = graphPath !== root;
  const header = onTypes ? document.querySelector('nav.site-nav a[data-keep]') : null;
  const profileQ = header ? new URL(header.getAttribute('href') || '', location.href).searchParams : cur;
  const url = (suffix, extra) => {
    const p = new URLSearchParams();
    const from = suffix === '' ? cur : profileQ;
    for (const k of ['si', 'f', 'i', 'h', 's', 't']) if (from.get(k)) p.set(k, from.get(k));
    if ((suffix === '' || suffix === '/annotate') && onTypes && cur.get('skid')) p.set('skid', cur.get('skid'));
    for (const [k, v] of Object.entries(extra)) p.set(k, v);
    return `${suffix === '' ? graphPath : root}${suffix}?${p}`;
  };
  const exact = `^${escapeRE(name)}$`;
  const filters = [
    { label: 'Focus on it', short: 'Focus', href: url('', { f: exact }), title: 'Keep only stacks through this function (pprof -focus)' },
    { label: 'Ignore it', short: 'Ignore', href: url('', { i: exact }), title: 'Drop stacks through this function (pprof -ignore)' },
    { label: 'Hide it', short: 'Hide', href: url('', { h: exact }), title: 'Remove this frame from stacks (pprof -hide)' },
  ];
  if (mapping === DATA_TYPE_MAPPING) {
    // A data type or member of the data-type flame graph: no function's
    // pages, but the data-type page (its layout and the functions that
    // touch it), and the filters.
    const p = new URLSearchParams();
    for (const k of ['si', 'skid']) if (cur.get(k)) p.set(k, cur.get(k));
    const q = p.toString();
    return [{ label: 'Data-type page', short: 'Data types', href: `${root}/types${q ? `?${q}` : ''}`, title: 'Its layout, member shares and the functions that touch it' }, ...filters];
  }
  return [
    { label: 'Callers and callees (sandwich)', short: 'Callers/callees', href: url('/sandwich', { fn: name }) },
    { label: 'Source', short: 'Source', href: url('/source', { fn: name }), title: 'Source with per-line samples, from this machine or debuginfod' },
    { label: 'Annotate', short: 'Annotate', href: url('/annotate', { fn: name }), title: 'Disassembly with per-instruction samples' },
    ...filters,
  ];
}

/** The mapping of the data-type flame graph's type and member frames (web/datatypes.go). */
export const DATA_TYPE_MAPPING = '[data type]';

// ---- colors ----

/**
 * hsl(h, s%, l%) as "#rrggbb": canvases parse hex fastest, and a flame
 * graph sets a fill per frame.
 */
export function hsl(h, s, l) {
  s /= 100;
  l /= 100;
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + h / 30) % 12;
    const c = l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(255 * c).toString(16).padStart(2, '0');
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

export const MERGED = '…';
const UNSYMBOLIZED = /(^0x[0-9a-f]+$)|(\+0x[0-9a-f]+$)/i;
export const UNSYMBOLIZED_COLOR = [hsl(215, 16, 74), hsl(215, 10, 88)];
export const MERGED_COLOR = [hsl(30, 6, 80), hsl(30, 6, 90)];
const ROOT_COLOR = [hsl(30, 12, 88), hsl(30, 8, 93)];
// GCC's clone suffixes: a C function, not a Go package path.
const C_SUFFIX = /\.(cold|part|isra|constprop|lto_priv|clone|localalias)(\.\d+)*$/;

// FNV-1a, so a name gets the same colour in every profile and every session.
export function hash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function basename(p) {
  const i = p.lastIndexOf('/');
  return i >= 0 ? p.slice(i + 1) : p;
}

/** Whether name is a raw address (binary+0xOFFSET or 0xADDR), not a function. */
export function isUnsymbolized(name) { return UNSYMBOLIZED.test(name); }

/**
 * The color group of a frame: its Go package ("net/http"), C++ namespace or
 * Rust crate (the first "::" component, "std", "core"), else the binary it
 * is in ("libc.so.6"; mapping is its path). "…" and raw addresses are
 * groups of their own: MERGED and "unsymbolized".
 */
export function packageOf(name, mapping) {
  if (name === MERGED) return MERGED;
  if (isUnsymbolized(name)) return 'unsymbolized';
  let s = name;
  // "<alloc::vec::Vec<T> as core::ops::Drop>::drop": the type's crate.
  if (s.startsWith('<')) s = s.slice(1);
  // Drop arguments and template parameters before looking for separators.
  const cut = s.search(/[(<]/);
  if (cut > 0) s = s.slice(0, cut);
  s = s.trim();
  // "void ns::f" (a demangled return type): the last word.
  if (s.includes(' ')) s = s.slice(s.lastIndexOf(' ') + 1);
  const colons = s.indexOf('::');
  if (colons > 0) return s.slice(0, colons);
  if (!C_SUFFIX.test(s)) {
    // Go: the package path is up to the first '.' after the last '/'.
    const slash = s.lastIndexOf('/');
    const dot = s.indexOf('.', slash + 1);
    if (dot > 0 && /^[\w./-]+$/.test(s.slice(0, dot))) return s.slice(0, dot);
  }
  return mapping ? basename(mapping) : '(no binary)';
}

/** The fill of a group key (package or binary), varied a little by name so neighbours differ. */
export function colorFor(key, name) {
  if (key === MERGED) return MERGED_COLOR;
  if (key === 'unsymbolized') return UNSYMBOLIZED_COLOR;
  const h = hash(key);
  // Hues all round the wheel but the unsymbolized blue-grey and the search's purple.
  let hue = h % 300;
  if (hue > 195) hue += 60; // skip 196..255
  const sat = 58 + ((h >>> 9) % 20);
  const light = 70 + ((h >>> 17) % 8) + (name ? (hash(name) % 5) - 2 : 0);
  return [hsl(hue, sat, light), hsl(hue, 20, Math.min(light + 14, 93))];
}

/** The fill of a self share r in [0, 1] of the hottest function: pale yellow to deep red. */
export function heatColor(r) {
  const a = Math.max(0, Math.min(1, r));
  const s = Math.sqrt(a);
  const hue = Math.round(52 - 52 * s);
  const light = Math.round(88 - 30 * s);
  return [hsl(hue, 90, light), hsl(hue, 25, Math.min(light + 8, 94))];
}

/** The fill of a change r in [-1, 1] relative to the largest change: red grew, blue shrank. */
export function diffColor(r) {
  const a = Math.min(1, Math.abs(r));
  if (a < 0.01) return hsl(30, 8, 86);
  const light = Math.round(90 - 38 * Math.sqrt(a));
  return r > 0 ? hsl(0, 78, light) : hsl(220, 78, light);
}

/** The color group of name index nm of tree under scheme ('package' or 'binary'), cached per name. */
export function groupOf(tree, nm, scheme) {
  const e = nameInfo(tree, nm);
  let g = e.group[scheme];
  if (g === undefined) g = e.group[scheme] = computeGroup(tree.names[nm], e.mapping, scheme);
  return g;
}

// nameInfo is the cache entry of a frame name: its binary, and its
// groups and fills by scheme, across the trees of one page (bounded:
// cleared past COLOR_CACHE_MAX names). Keyed by the name alone, with no
// string built per lookup: a zoomed or time-range tree repeats most of
// its names, and recoloring each tree is on the way to its drawing.
function nameInfo(tree, nm) {
  const name = tree.names[nm];
  const mapping = tree.mappingOfName(nm);
  let e = colorCache.get(name);
  if (e === undefined || e.mapping !== mapping) {
    if (colorCache.size > COLOR_CACHE_MAX) colorCache.clear();
    e = { mapping, group: {}, fill: {} };
    colorCache.set(name, e);
  }
  return e;
}

function computeGroup(name, mapping, scheme) {
  if (scheme === 'binary') {
    if (name === MERGED) return MERGED;
    return mapping ? basename(mapping) : '(no binary)';
  }
  return packageOf(name, mapping);
}

/**
 * [fill, faded fill] of name index nm of tree under scheme 'package' or
 * 'binary' (cached per name), or 'heat' given heatMax, the largest self
 * value of a function (heatMaxOf).
 */
export function nameColor(tree, nm, scheme, heatMax = 0) {
  if (nm === tree.name[0]) return ROOT_COLOR;
  if (scheme === 'heat') {
    return tree.names[nm] === MERGED ? MERGED_COLOR : heatColor(heatMax > 0 ? tree.selfByName()[nm] / heatMax : 0);
  }
  const e = nameInfo(tree, nm);
  let c = e.fill[scheme];
  if (!c) {
    const key = groupOf(tree, nm, scheme);
    c = e.fill[scheme] = key === MERGED || key === 'unsymbolized' ? colorFor(key) : colorFor(key, scheme === 'package' ? tree.names[nm] : '');
  }
  return c;
}

/** The largest self value of a function of tree (heat's full scale). */
export function heatMaxOf(tree) {
  const self = tree.selfByName();
  let max = 0;
  for (let nm = 0; nm < tree.names.length; nm++) if (tree.names[nm] !== MERGED && nm !== tree.name[0]) max = Math.max(max, self[nm]);
  return max;
}

/** Per name index of tree: [fill, faded fill] under scheme 'package', 'binary' or 'heat'. */
export function nameColors(tree, scheme) {
  const max = scheme === 'heat' ? heatMaxOf(tree) : 0;
  return Array.from(tree.names, (_, nm) => nameColor(tree, nm, scheme, max));
}

// colorCache: nameInfo's entries, by frame name.
const colorCache = new Map();
const COLOR_CACHE_MAX = 400000;

/**
 * The legend of a scheme: the n groups with the most value in tree (each
 * counted once per stack: the group's frames nearest the root), then the
 * unsymbolized and merged swatches. Heat's legend is its scale.
 */
export function legendEntries(tree, scheme, n = 6) {
  if (scheme === 'heat') {
    return [
      { label: 'little self time', color: heatColor(0)[0] },
      { label: 'half', color: heatColor(0.5)[0] },
      { label: 'most self time', color: heatColor(1)[0] },
      { label: 'merged (…)', color: MERGED_COLOR[0], key: MERGED },
    ];
  }
  const byName = new Array(tree.names.length);
  const value = new Map();
  // The value of a group: its frames whose parent is in another group.
  // Frames under 1/5000 of the root (a fraction of a pixel) and their
  // subtrees are left out: the legend names the widest groups, and
  // looking at every name of a big tree delayed the next redraw.
  const min = Math.abs(tree.rootTotal) / 5000;
  for (let i = 1; i < tree.length; i++) {
    if (Math.abs(tree.total[i]) < min) { i = tree.end[i] - 1; continue; }
    const nm = tree.name[i];
    if (byName[nm] === undefined) byName[nm] = groupOf(tree, nm, scheme);
    const key = byName[nm];
    const p = tree.parent[i];
    const pk = p > 0 ? (byName[tree.name[p]] ?? (byName[tree.name[p]] = groupOf(tree, tree.name[p], scheme))) : null;
    if (pk !== key) value.set(key, (value.get(key) || 0) + tree.total[i]);
  }
  const top = [...value.entries()].filter(([k]) => k !== MERGED && k !== 'unsymbolized')
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
  const out = top.map(([k]) => ({ label: k, color: colorFor(k)[0], key: k }));
  out.push({ label: 'unsymbolized', color: UNSYMBOLIZED_COLOR[0], key: 'unsymbolized' });
  out.push({ label: 'merged (…)', color: MERGED_COLOR[0], key: MERGED });
  return out;
}

/**
 * Fills el (the legend row) with entries ({label, color, key}) of scheme.
 * A package path reads as its last elements ("…/handler", more where two
 * would read alike; packageLabels), the whole of it in the title.
 */
export function renderLegend(el, entries, scheme) {
  const frag = document.createDocumentFragment();
  const shown = packageLabels(entries.map((e) => e.label));
  entries.forEach((e, n) => {
    const item = document.createElement('span');
    item.className = 'legend-item';
    if (e.key) item.dataset.key = e.key;
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = e.color;
    const text = document.createElement('span');
    text.textContent = shown[n];
    item.title = e.label;
    item.append(sw, text);
    frag.append(item);
  });
  el.replaceChildren(frag);
  el.dataset.scheme = scheme;
}

// ---- layout ----

const MIN_CHART = 220;
/**
 * Sizes chart (in a .flame-body, flame.css) to the window's height below
 * its top, so the graph scrolls inside itself and the table beside it (or
 * below it, on a phone) stays in reach; refits on resize, on load and when
 * an element of above changes size. Returns the refit function.
 */
export function fitToWindow(chart, above) {
  const fit = () => {
    const box = chart.getBoundingClientRect();
    const top = box.top + window.scrollY;
    // Below the chart in its column: the detail strip and the help line, and
    // the page's bottom padding.
    const main = chart.closest('main');
    const below = chart.parentElement.getBoundingClientRect().bottom - box.bottom
      + (main ? parseFloat(getComputedStyle(main).paddingBottom) || 0 : 0) + 2;
    const h = Math.max(MIN_CHART, Math.floor(window.innerHeight - top - below));
    if (chart.style.height !== `${h}px`) {
      chart.style.height = `${h}px`;
      chart.parentElement.style.setProperty('--chart-h', `${h + 8}px`); // and its top margin
      chart.closest('.flame-body').style.setProperty('--chart-room', `${h}px`);
    }
  };
  window.addEventListener('resize', fit);
  window.addEventListener('load', fit);
  const ro = new ResizeObserver(fit);
  for (const el of above) if (el) ro.observe(el);
  return fit;
}

// ---- header links ----

/**
 * Sets query parameter key ('' removes it) in the header's links that
 * follow it (data-keep, e.g. "si t"), after the page changed it in place:
 * the sample-type switch and the timeline's range.
 */
export function keepNav(key, value) {
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll('nav.site-nav a[data-keep]'))) {
    if ((a.dataset.keep || '').split(' ').includes(key)) a.href = withParam(a.getAttribute('href') || '', key, value);
  }
}

/** url (a path or absolute) with query parameter key set to value, or without it when value is '', as a path. */
export function withParam(url, key, value) {
  const u = new URL(url, location.href);
  if (value) u.searchParams.set(key, value); else u.searchParams.delete(key);
  return u.pathname + u.search + u.hash;
}

// ---- events ----

/** Dispatches "viewer:type" on document with detail. */
export function emit(type, detail) {
  document.dispatchEvent(new CustomEvent(`viewer:${type}`, { detail }));
}

/** Calls fn(detail) on each "viewer:type" event; returns the unsubscribe function. */
export function on(type, fn) {
  const h = (e) => fn(e.detail);
  document.addEventListener(`viewer:${type}`, h);
  return () => document.removeEventListener(`viewer:${type}`, h);
}

/**
 * Calls fn whenever the device pixel ratio changes (a window moved to
 * another screen, the browser's zoom): a canvas sized in device pixels
 * must be redrawn then, and a resize event may come before the new ratio.
 */
export function onPixelRatioChange(fn) {
  const arm = () => {
    const mq = window.matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    mq.addEventListener('change', () => { fn(); arm(); }, { once: true });
  };
  arm();
}
