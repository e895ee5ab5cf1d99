// page.js wires the flame graph page: it fetches flame.json, hands it to a
// FlameGraph, and keeps the toolbar, breadcrumb, legend, tooltip, detail
// strip, top table and the URL in step. View state (si, q, z = zoom path,
// mode, color) lives in the query string via history.replaceState, so a
// copied link shows the same view.
//
// Zooming fetches flame.json?z=PATH, the subtree compacted at the zoomed
// frame's total, so merged "…" frames open; the top table and the search's
// matched share come from top.json, computed on the server from every sample.
//
// What the page's other modules share (the graph, the tree drawn now,
// reload(), frameRect()) is in flamestate.js, which page.js keeps up to
// date; what it measures of itself for the benchmarks is in
// pagetimings.js. setViewParam is timeline.js's (the same as
// timeorder.js's). Shared helpers are in common.js; window.viewer is for
// tests and the console only.

import {
  Tree, Minimap, formatValue, formatPct, columnUnit, formatIn, quantity,
} from './flame.js';
import { fitNameCells } from './names.js';
import {
  $, readConfig, getJSON as fetchJSON, escapeRE, compileSearch, wireCopyLink, fitToWindow, tooltipRow, placeTooltip,
  frameLinks, legendEntries, renderLegend, packageOf, emit, keepNav, withParam,
} from './common.js';
import { graph, setTree, setReload, frameRect } from './flamestate.js';
import * as timing from './pagetimings.js';

const config = readConfig('flame-config');

const chart = $('chart');
const minimap = $('minimap') ? new Minimap(graph, $('minimap')) : null;
const legend = $('legend');
const schemeSelect = /** @type {HTMLSelectElement} */ ($('color-scheme'));
const detail = $('detail');
const search = /** @type {HTMLInputElement} */ ($('search'));
const matchOut = $('match');
const tooltip = $('tooltip');
const status = $('chart-status');
const note = $('flame-note');
const crumbs = $('crumbs');
const resetBtn = /** @type {HTMLButtonElement} */ ($('reset'));
const siSelect = /** @type {HTMLSelectElement} */ ($('si'));
const TOP_ROWS = 100;
// exact: the server has top.json and flame.json?z= for this tree (the
// profile's flame page); otherwise (data types) the table is the drawn tree's.
const exact = !!config.exact;

let dataURL = config.dataURL;
let si = config.si || '';
let siInURL = new URLSearchParams(location.search).has('si');
/** @type {Tree | null} */
let tree = null; // the tree drawn (flamestate.js's currentTree(), through setTree)
let loads = 0;
let generation = 0;
let topSort = { key: 'flat', desc: true };
let topAll = false;
let tipFor = -1; // node the tooltip content describes
let tipTree = null;
const trees = new Map(); // zoom key → Tree, the few last fetched
const TREES_KEPT = 8;
let zoomGen = 0;
let zoomStart = 0; // performance.now() when the zoom drawn last began
let localDraw = 0; // timer: the old tree zoomed, if the fetch is slow
const LOCAL_DRAW_MS = 150;
let topGen = 0;
let top = null; // the last top.json
let earlyTop = null; // { url, json }: the first top.json, asked for beside the first flame.json

// ---- URL state ----

function readURL() {
  const p = new URLSearchParams(location.search);
  search.value = p.get('q') || '';
  graph.mode = p.get('mode') === 'flame' ? 'flame' : 'icicle';
  graph.zoomPath = p.getAll('z');
  graph.scheme = ['binary', 'heat'].includes(p.get('color')) ? p.get('color') : 'package';
  if (schemeSelect) schemeSelect.value = graph.scheme;
  setSearchRE(search.value);
  showMode();
}

function writeURL() {
  const p = new URLSearchParams(location.search);
  for (const k of ['si', 'q', 'z', 'mode', 'color']) p.delete(k);
  if (si && siInURL) p.set('si', si);
  if (search.value) p.set('q', search.value);
  for (const name of graph.zoomPath) p.append('z', name);
  if (graph.mode === 'flame') p.set('mode', 'flame');
  if (graph.scheme !== 'package') p.set('color', graph.scheme);
  const qs = p.toString();
  const url = location.pathname + (qs ? `?${qs}` : '') + location.hash;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(history.state, '', url);
}

/** flame.json or top.json (file) for the page's si and filters, zoomed at path. */
function viewURL(file, path, extra) {
  const u = new URL(dataURL, location.href);
  u.pathname = u.pathname.replace(/\/flame\.json$/, `/${file}`);
  u.searchParams.delete('z');
  for (const e of path || []) u.searchParams.append('z', e);
  for (const [k, v] of Object.entries(extra || {})) u.searchParams.set(k, v);
  return u.pathname + u.search;
}

function getJSON(url, revalidate, marks) {
  return fetchJSON(url, { revalidate, marks });
}

function keep(path, t) {
  const k = path.join('\n');
  trees.delete(k);
  trees.set(k, t);
  while (trees.size > TREES_KEPT) trees.delete(trees.keys().next().value);
}

// ---- loading ----

/**
 * Refetches flame.json and redraws, keeping zoom, search and mode. The
 * top table's top.json is asked for beside it; after the first load the
 * graph and the table change together (tables follow the view, showTop),
 * unless the table comes over TOP_WAIT_MS after the graph: then the
 * graph comes first and the table says it is loading the new view.
 */
export async function reload() {
  const gen = ++generation;
  zoomGen++; // a zoom fetch under way is for the old tree
  const tgen = ++topGen; // so is a table on its way
  trees.clear();
  topCache.clear(); // names may have changed (symbolize.js), or the range (t=)
  const t0 = performance.now();
  const path = graph.zoomPath.slice();
  const marks = {};
  let json;
  let table = null; // the table's top.json, when the graph waits for it
  try {
    // After the first load, revalidate: names may have changed on the server.
    const pending = getJSON(path.length ? viewURL('flame.json', path) : dataURL, loads > 0, marks);
    if (loads === 0) requestTopEarly();
    else if (exact) table = settle(topFor(path, true));
    json = await pending;
  } catch (err) {
    if (gen === generation) showStatus(`Could not load the flame graph: ${err.message}`, true);
    throw err;
  }
  if (gen !== generation) return; // a newer reload won
  const t1 = performance.now();
  try {
    tree = new Tree(json);
    setTree(tree);
  } catch (err) {
    showStatus(`Could not draw the flame graph: ${err.message}`, true);
    throw err;
  }
  const t2 = performance.now();
  keep(tree.zoom, tree);
  const got = table && await Promise.race([table, wait(TOP_WAIT_MS)]);
  if (gen !== generation) return;
  graph.setTree(tree);
  const t3 = performance.now();
  showStatus(tree.rootTotal > 0 ? '' : emptyReason(), false);
  // The server compacted the tree to its rendering budget: say so.
  if (note) {
    note.textContent = json.compacted ? json.compacted.note : '';
    note.hidden = !json.compacted;
  }
  showCrumbs();
  writeURL();
  if (loads === 0 || !exact) fetchTop(false);
  else if (got) showTop(got, tgen);
  else {
    showTopPending(); // the graph's view, the table's rows to come
    table.then((r) => showTop(r, tgen));
  }
  // After the graph is on screen: idle time, so the frame showing it comes first.
  if (window.requestIdleCallback) requestIdleCallback(showLegend, { timeout: 300 }); else setTimeout(showLegend, 0);
  timing.loaded(t0, t1, t2, t3, marks, tree.length);
  loads++;
  document.body.dataset.loads = String(loads);
  document.body.dataset.ready = '1';
  emit('drawn', { loads });
}

// TOP_WAIT_MS: how long a redrawn graph waits for its table's rows.
const TOP_WAIT_MS = 150;

/** A promise of ms from now, resolving to null. */
function wait(ms) { return new Promise((resolve) => { setTimeout(() => resolve(null), ms); }); }

/** p as a promise that never rejects: {json} or {error}. */
function settle(p) { return p.then((json) => ({ json }), (error) => ({ error })); }

/**
 * Sets query parameter key of every view (the timeline's t=; '' removes it)
 * in the page's URL, its data and its links, and redraws (static/timeline.js).
 */
export function setViewParam(key, value) {
  const set = (url) => withParam(url, key, value);
  config.dataURL = set(config.dataURL);
  dataURL = set(dataURL);
  for (const id of ['svg-link', 'top-link', 'filter-clear']) {
    const a = /** @type {HTMLAnchorElement} */ ($(id));
    if (a) a.href = set(a.getAttribute('href'));
  }
  keepNav(key, value);
  history.replaceState(history.state, '', set(location.href));
  return reload();
}

/** Why the graph drawn has no samples: a range or filters chosen, else the sample type. */
function emptyReason() {
  const q = new URLSearchParams(location.search);
  if (q.get('t')) return 'No samples in this time range: choose another on the timeline, or show the whole recording.';
  if (['f', 'i', 'h', 's'].some((k) => q.get(k))) return 'No samples pass these filters: change or clear them.';
  return 'This profile has no samples for this sample type.';
}

function showStatus(text, isError) {
  status.textContent = text;
  status.hidden = !text;
  status.classList.toggle('error', !!isError);
}

// ---- search ----

function setSearchRE(q) {
  graph.setSearch(compileSearch(q));
}

// The matched share is top.json's (every sample with a matching frame);
// the frame count is of the frames in the drawn tree.
function showMatch() {
  const m = graph.matched;
  if (!m || !tree || !top || top.matched === undefined) {
    matchOut.textContent = '';
    matchOut.hidden = true;
    delete matchOut.dataset.share;
    return;
  }
  matchOut.hidden = false;
  const value = top.matched;
  const share = top.total > 0 ? value / top.total : 0;
  matchOut.dataset.share = String(share);
  matchOut.classList.toggle('none', value === 0);
  matchOut.textContent = value === 0 ? 'no match'
    : `${formatPct(share)} matched · ${formatValue(value, top.unit)} of ${formatValue(top.total, top.unit)} · ${m.frames.toLocaleString('en-US')} frame${m.frames === 1 ? '' : 's'} drawn`;
  matchOut.title = matchOut.textContent; // the whole text, when the badge is cut short (style.css)
}

function applySearch(q) {
  if (search.value !== q) search.value = q;
  setSearchRE(q);
  writeURL();
  fetchTop();
}

let searchTimer = 0;
search.addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => applySearch(search.value), 120);
});
search.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') { clearTimeout(searchTimer); applySearch(search.value); }
});

// ---- zoom ----

graph.onzoom = () => {
  tipFor = -1; // the tooltip's "In zoom" share changes
  showCrumbs();
  writeURL();
  clearTimeout(localDraw);
  return zoomView();
};

// zoomView draws the zoom and shows its top table in the same frame
// (tables follow the view): at once when both are in hand (a kept tree, or
// the drawn one when it is exact below the zoom; a kept top.json, or the
// one the drawn tree gives when it is exact there), else once the finer
// tree (flame.json?z=, unless the drawn tree has no merged frame below the
// zoom) and the table (top.json?z=), asked for together, have come. Only
// a slow server gets the old tree zoomed meanwhile (LOCAL_DRAW_MS), with
// the table saying it is loading that view. It returns true: it draws.
function zoomView() {
  const gen = ++zoomGen;
  const tgen = ++topGen;
  zoomStart = timing.zoomBegun();
  const path = graph.zoomPath.slice();
  let t = trees.get(path.join('\n'));
  if (t) keep(path, t); // most recently used
  const marks = {};
  // Above the drawn tree's zoomed frame only its chain is there; below it,
  // merged frames open in a finer tree.
  const needTree = !t && exact && (graph.zoom < tree.zoom.length || tree.hasMerged(graph.zoom));
  const topURL = exact ? viewURL('top.json', path, topExtra()) : '';
  const kept = topURL ? topCache.get(topURL) : null;
  if (!needTree) {
    if (t && t !== tree) swapTree(t); else graph.draw();
    // The table from what is in hand, then (when that was the drawn
    // tree's) top.json's rows, the same but for ties and the search's
    // share, which is of every sample.
    if (kept) showTop({ json: kept }, tgen);
    else if (!exact || !tree.hasMerged(graph.zoom)) {
      showTop({ json: { ...localTop(topExtra()), matched: top ? top.matched : undefined } }, tgen);
      if (exact) settle(topFor(path, false)).then((r) => showTop(r, tgen));
    } else {
      showTopPending();
      settle(topFor(path, false)).then((r) => showTop(r, tgen));
    }
    zoomDone(gen, 0, 0, marks);
    return true;
  }
  document.body.dataset.zoom = 'loading';
  const treeP = settle(getJSON(viewURL('flame.json', path), false, marks).then((json) => {
    marks.fetched = performance.now();
    const built = new Tree(json);
    marks.buildMs = performance.now() - marks.fetched;
    return built;
  }));
  const tableP = kept ? Promise.resolve({ json: kept }) : settle(topFor(path, false));
  // A finer tree is on its way, usually within tens of ms: draw the zoom
  // when it arrives. Drawing the old tree zoomed now would take the page's
  // thread (recording, then rasterizing thousands of labels) that the
  // response waits for; only a slow server gets that redraw meanwhile.
  localDraw = setTimeout(() => { graph.draw(); showTopPending(); }, LOCAL_DRAW_MS);
  Promise.all([treeP, tableP]).then(([tr, table]) => {
    if (gen !== zoomGen) return; // zoomed elsewhere meanwhile
    clearTimeout(localDraw);
    if (tr.error) {
      graph.draw(); // the old tree, zoomed
      showTop(table, tgen);
      document.body.dataset.zoom = 'error';
      showStatus(`Could not load the zoomed flame graph: ${tr.error.message}`, true);
      return;
    }
    keep(path, tr.json);
    swapTree(tr.json);
    showTop(table, tgen);
    zoomDone(gen, marks.fetched - zoomStart, marks.buildMs, marks);
  });
  return true;
}

// swapTree draws t (of the zoom) in place of the drawn tree.
function swapTree(t) {
  tree = t;
  setTree(t);
  graph.setTree(t);
  showCrumbs();
  showLegend();
  writeURL();
}

// zoomDone records a zoom's timings (pagetimings.js) and says it is drawn.
function zoomDone(gen, fetchMs, buildMs, marks) {
  if (gen !== zoomGen) return;
  const ms = timing.zoomed(fetchMs, buildMs, marks, tree.length, graph.lastDrawMs);
  document.body.dataset.zoom = 'ready';
  emit('zoomed', { ms, path: graph.zoomPath });
}

function showCrumbs() {
  crumbs.replaceChildren();
  if (!tree) return;
  const chain = tree.ancestry(graph.zoom);
  resetBtn.disabled = chain.length <= 1;
  crumbs.hidden = chain.length <= 1;
  chain.forEach((i, k) => {
    if (k > 0) {
      const sep = document.createElement('span');
      sep.className = 'sep';
      sep.textContent = '›';
      sep.setAttribute('aria-hidden', 'true');
      crumbs.append(sep);
    }
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'crumb';
    b.textContent = k === 0 ? 'all' : tree.label(i);
    b.title = tree.label(i);
    if (k === chain.length - 1) b.setAttribute('aria-current', 'true');
    else b.addEventListener('click', () => graph.zoomTo(i));
    crumbs.append(b);
  });
  crumbs.scrollLeft = crumbs.scrollWidth;
}

resetBtn.addEventListener('click', () => graph.zoomTo(0));

document.addEventListener('keydown', (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.target instanceof HTMLTextAreaElement;
  if (e.key === 'Escape') {
    if (e.target === search && search.value) { applySearch(''); return; }
    if (detail && !detail.hidden) { detail.hidden = true; fitChart(); }
    if (tree && graph.zoom !== 0) { graph.zoomTo(0); e.preventDefault(); }
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '/') { e.preventDefault(); search.focus(); search.select(); }
  if (e.key === 'Backspace' && tree && graph.zoom !== 0) { graph.zoomTo(tree.parent[graph.zoom]); e.preventDefault(); }
});

// ---- mode ----

function showMode() {
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('[data-mode]'))) {
    b.setAttribute('aria-pressed', String(b.dataset.mode === graph.mode));
  }
  chart.classList.toggle('flame-mode', graph.mode === 'flame');
}

for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('[data-mode]'))) {
  b.addEventListener('click', () => {
    graph.setMode(b.dataset.mode);
    showMode();
    writeURL();
  });
}

// ---- sample type ----

if (siSelect) {
  siSelect.addEventListener('change', () => {
    si = siSelect.value;
    siInURL = true;
    dataURL = withParam(config.dataURL, 'si', si);
    for (const id of ['svg-link', 'top-link', 'filter-clear']) {
      const a = /** @type {HTMLAnchorElement} */ ($(id));
      if (a) a.href = withParam(a.getAttribute('href'), 'si', si);
    }
    keepNav('si', si);
    writeURL();
    emit('si', si); // the timeline follows (timeline.js)
    reload().catch(() => {});
  });
}

// ---- tooltip and detail strip ----

graph.onhover = (g, i, e) => {
  if (i < 0 || !tree || !e) { tooltip.hidden = true; return; }
  if (i !== tipFor || tree !== tipTree) {
    tooltip.replaceChildren(...describe(i, true));
    tipFor = i;
    tipTree = tree;
  }
  tooltip.hidden = false;
  placeTooltip(tooltip, e);
};

/**
 * What the page says about frame i: name, package and binary, file:line
 * and whether it was inlined, total and self (value and share of the
 * profile), its samples (or stacks, without a counting sample type), and
 * the share of the zoomed frame. hint adds the tooltip's click hint.
 */
function describe(i, hint) {
  const unit = tree.unit;
  const total = tree.total[i];
  const self = tree.self[i];
  const label = tree.label(i);
  const name = document.createElement('div');
  name.className = 'tt-name';
  name.textContent = label;
  const parts = [name];
  const mapping = tree.mappingOf(i);
  const pkg = packageOf(label, mapping);
  const where = [];
  if (label !== '…' && pkg !== 'unsymbolized') where.push(pkg);
  if (mapping && !where.includes(mapping)) where.push(mapping);
  if (where.length) {
    const m = document.createElement('div');
    m.className = 'tt-mapping';
    m.textContent = where.join(' · ');
    parts.push(m);
  }
  const src = tree.sourceOf(i);
  if (label !== '…' && i > 0) {
    const f = document.createElement('div');
    f.className = 'tt-file';
    const inl = src.inlined === 1 ? 'inlined' : src.inlined === 2 ? 'inlined at some call sites' : src.inlined === 0 ? 'not inlined' : '';
    f.textContent = [src.file || (pkg === 'unsymbolized' ? 'no symbol: raw address' : 'no file:line'), inl].filter(Boolean).join(' · ');
    parts.push(f);
  }
  parts.push(tooltipRow('Total', formatValue(total, unit), formatPct(total / tree.rootTotal)));
  parts.push(tooltipRow('Self', formatValue(self, unit), formatPct(self / tree.rootTotal)));
  // Samples beside the value: the counting sample type's (samples/count
  // of a CPU profile), else the sample records, which the page's header
  // calls stacks; a sample type that counts is its own count.
  const n = tree.countsOf(i);
  if (n) parts.push(tooltipRow(tree.countType ? 'Samples' : 'Stacks', `${formatValue(n.total, 'count')} total`, `${formatValue(n.self, 'count')} self`));
  else if (isCount(unit)) parts.push(tooltipRow('Samples', `${formatValue(total, unit)} total`, `${formatValue(self, unit)} self`));
  const z = graph.zoom;
  if (z !== 0 && tree.depth[i] > tree.depth[z]) {
    parts.push(tooltipRow('In zoom', formatValue(total, unit), formatPct(total / tree.total[z])));
  }
  if (label === '…') {
    const n = document.createElement('div');
    n.className = 'tt-note';
    n.textContent = 'Frames too small to draw at this zoom, merged by the server. Click to open them.';
    parts.push(n);
  } else if (hint) {
    const n = document.createElement('div');
    n.className = 'tt-note';
    n.textContent = 'Click to zoom and for links; right-click for the menu.';
    parts.push(n);
  }
  return parts;
}

function isCount(unit) { return !unit || unit === 'count' || unit === 'samples'; }

// A click zooms into the frame and opens the detail strip: the same facts
// and the links about its function.
graph.onselect = (g, path) => {
  if (!detail || !tree) return;
  const i = tree.resolve(path);
  const label = tree.label(i);
  if (i <= 0 || label === '…') { detail.hidden = true; fitChart(); return; }
  const body = document.createElement('div');
  body.className = 'detail-facts';
  body.append(...describe(i, false));
  const links = document.createElement('nav');
  links.className = 'detail-links';
  links.setAttribute('aria-label', 'About this function');
  for (const l of frameLinks(label, location.pathname, tree.mappingOf(i))) {
    const a = document.createElement('a');
    a.href = l.href;
    a.textContent = l.short;
    a.className = 'button small';
    if (l.title) a.title = l.title;
    links.append(a);
  }
  const close = document.createElement('button');
  close.type = 'button';
  close.className = 'detail-close';
  close.setAttribute('aria-label', 'Close the detail strip');
  close.textContent = '×';
  close.addEventListener('click', () => { detail.hidden = true; fitChart(); });
  detail.replaceChildren(body, links, close);
  detail.dataset.fn = label;
  detail.hidden = false;
  fitChart();
};

// ---- colors and legend ----

function showLegend() {
  if (!legend || !tree) return;
  renderLegend(legend, legendEntries(tree, graph.scheme), graph.scheme);
}

if (schemeSelect) {
  schemeSelect.addEventListener('change', () => {
    graph.setScheme(schemeSelect.value);
    tipFor = -1;
    showLegend();
    writeURL();
  });
}

// ---- layout: the graph takes the rest of the window ----

// Whatever above the chart changes size (the panel folding, the legend, the
// breadcrumb) moves its top.
const fitChart = fitToWindow(chart, document.querySelectorAll('.page-head, #toolbar, #symbolization, #legend, #crumbs, #flame-note'));
graph.ondraw = () => { if (minimap) minimap.draw(); };

// The Filters popover closes on a click elsewhere or Escape.
const filtersPop = /** @type {HTMLDetailsElement} */ ($('filters-pop'));
if (filtersPop) {
  document.addEventListener('click', (e) => { if (filtersPop.open && !filtersPop.contains(/** @type {Node} */ (e.target))) filtersPop.open = false; });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && filtersPop.open) filtersPop.open = false; });
}

// ---- top functions ----

const topTable = /** @type {HTMLTableElement} */ ($('top-table'));
const topBody = /** @type {HTMLTableSectionElement} */ (topTable.querySelector('tbody'));
const topMore = $('top-more');

// The table covers the zoomed frame's subtree, with shares of its total, so
// zooming works like pprof's focus. The server sorts by the column (flat, cum
// descending; name ascending) and sends the first rows; the other direction
// reverses them. fetchTop shows the table of the view drawn now (a sort,
// a search, more rows); a zoom or a reload shows it with the graph.
async function fetchTop(revalidate) {
  if (!tree) return;
  const gen = ++topGen;
  topTable.dataset.state = 'loading';
  showTop(await (exact ? settle(topFor(graph.zoomPath, revalidate)) : { json: localTop(topExtra()) }), gen);
}

// topCache: the last top.json answers by URL, so that a zoom back to a
// view shows its table with its graph.
const topCache = new Map();
const TOPS_KEPT = 16;

/** top.json of the view at path (with topExtra), kept or asked for (revalidate: asked again). */
function topFor(path, revalidate) {
  const url = viewURL('top.json', path, topExtra());
  const early = earlyTop;
  earlyTop = null;
  if (!revalidate && topCache.has(url)) return Promise.resolve(topCache.get(url));
  const p = early && early.url === url && !revalidate ? early.json : getJSON(url, revalidate);
  return p.then((json) => {
    topCache.delete(url);
    topCache.set(url, json);
    while (topCache.size > TOPS_KEPT) topCache.delete(topCache.keys().next().value);
    return json;
  });
}

/** Shows answer ({json} or {error}: a settled top.json) unless a newer table (topGen) was asked for since gen. */
function showTop(answer, gen) {
  if (gen !== topGen) return;
  if (answer.error) {
    topTable.dataset.state = 'error';
    $('top-scope').textContent = `Could not load the top table: ${answer.error.message}`;
    return;
  }
  top = answer.json;
  renderTop();
  showMatch();
  topTable.dataset.state = 'ready';
  timing.topShown(topBody.rows.length);
  emit('top');
}

// showTopPending says the table is loading the view the graph shows: its
// scope is that view's, its rows still the last view's, dimmed (flame.css).
function showTopPending() {
  topTable.dataset.state = 'loading';
  const scope = $('top-scope');
  scope.textContent = `${scopeText(graph.zoomPath)} · loading…`;
  scope.title = scopeTitle(graph.zoomPath);
}

// viewRange is the time range (t=) the page shows, as [from, to] seconds
// since the first sample, or null.
function viewRange() {
  const m = /^([0-9.]+)-([0-9.]+)$/.exec(new URL(dataURL, location.href).searchParams.get('t') || '');
  return m ? [Number(m[1]), Number(m[2])] : null;
}

// scopeText says which samples the table counts: the zoomed frame (the
// last of path, with its share when known) and the time range.
function scopeText(path, share) {
  const r = viewRange();
  const secs = (x) => String(Number(x.toFixed(3)));
  const range = r ? `${secs(r[0])}–${secs(r[1])} s of the recording` : '';
  if (!path.length) return r ? `samples of ${range}` : 'whole profile';
  const last = path[path.length - 1];
  const of = share === undefined ? '' : ` (${formatPct(share)} of the ${r ? 'range' : 'profile'})`;
  return `within ${last.startsWith('…<') ? '…' : last}${of}${r ? `, ${range}` : ''}; shares of the zoomed frame`;
}

// scopeTitle is the whole zoom path, the scope's tooltip.
function scopeTitle(path) {
  return path.length ? `Zoomed into: all › ${path.join(' › ')}` : '';
}

// topExtra is top.json's query beyond the view's: the sort, the rows, the search.
function topExtra() {
  const extra = { sort: topSort.key };
  if (!topAll) extra.n = TOP_ROWS;
  else if (top) extra.n = Math.max(top.functions, 1);
  if (search.value) extra.q = search.value;
  return extra;
}

// requestTopEarly sends the first top.json beside the first flame.json, so
// the server computes the table while it sends the tree and the page draws
// it: asked for only once the graph is drawn, the table came a server
// computation later (0.3-0.7 s on a 2M-sample profile, BENCHMARKS.md).
// topFor takes its answer when it asks for the same URL.
function requestTopEarly() {
  if (!exact || loads > 0) return;
  const url = viewURL('top.json', graph.zoomPath, topExtra());
  earlyTop = { url, json: getJSON(url, false) };
  earlyTop.json.catch(() => {}); // showTop reports the error, if it still wants it
}

// localTop is top.json computed from the drawn tree, when there is no top.json.
function localTop(extra) {
  const z = graph.zoom;
  const { key } = topSort;
  const rows = tree.topFunctions(z);
  rows.sort((a, b) => (key === 'name' ? a.name.localeCompare(b.name) : b[key] - a[key]) || a.name.localeCompare(b.name));
  const out = {
    sampleType: tree.sampleType, unit: tree.unit, total: tree.rootTotal, zoomTotal: tree.total[z], zoom: tree.path(z), functions: rows.length,
    rows: rows.slice(0, extra.n || rows.length).map((r) => [r.name, r.flat, r.cum]),
  };
  if (extra.q && graph.matched) out.matched = graph.matched.value;
  return out;
}

function renderTop() {
  const t = top;
  const z = t.zoom.length;
  const scope = $('top-scope');
  scope.textContent = scopeText(t.zoom, z ? t.zoomTotal / t.total : undefined);
  scope.title = scopeTitle(t.zoom);
  const { key, desc } = topSort;
  const rows = t.rows.map(([name, flat, cum]) => ({ name, flat, cum }));
  if (desc === (key === 'name')) rows.reverse();
  const frag = document.createDocumentFragment();
  const total = t.zoomTotal;
  const re = graph.re;
  // One unit a column, as pprof writes a report.
  const flatCol = columnUnit(t.unit, rows.map((r) => r.flat));
  const cumCol = columnUnit(t.unit, rows.map((r) => r.cum));
  for (const r of rows) {
    const tr = document.createElement('tr');
    tr.dataset.name = r.name;
    if (re) {
      re.lastIndex = 0;
      if (re.test(r.name)) tr.className = 'match';
    }
    for (const [text, cls] of [
      [formatIn(flatCol, r.flat), 'num'], [formatPct(r.flat / total), 'num pct'],
      [formatIn(cumCol, r.cum), 'num'], [formatPct(r.cum / total), 'num pct'],
      [r.name, 'fn']]) {
      const td = document.createElement('td');
      td.className = cls;
      td.textContent = text;
      if (cls === 'fn') td.title = `${r.name}\nClick to search for it`;
      tr.append(td);
    }
    frag.append(tr);
  }
  topBody.replaceChildren(frag);
  fitNames();
  topMore.hidden = t.functions <= t.rows.length;
  $('top-all').textContent = `Show all ${t.functions.toLocaleString('en-US')}`;
  const what = quantity(t.sampleType, t.unit);
  for (const th of topTable.querySelectorAll('th')) {
    const b = /** @type {HTMLElement} */ (th.querySelector('[data-sort]'));
    if (!b) continue;
    const col = { flat: flatCol, cum: cumCol }[b.dataset.sort];
    if (col) {
      th.title = `${b.dataset.sort === 'flat' ? 'Self' : 'Cumulative'} ${/^[A-Z]{2}/.test(what) ? what : what.toLowerCase()}${col.name ? `, in ${col.name}` : ''}`;
      th.dataset.quantity = what;
    }
    if (b.dataset.sort === key) th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
    else th.removeAttribute('aria-sort');
  }
}

// fitNames writes each row's function name on one line of the name
// column, shortened (names.js fitNames) when it is wider, so that the
// function's own name (the end of a C++ or Go qualified name) stays
// readable and no two rows read alike; the cell's title has the whole
// name. The column is the table's rest beside the numbers (flame.css),
// the same width in every row.
function fitNames() { fitNameCells(topBody.querySelectorAll('td.fn')); }
new ResizeObserver(() => fitNames()).observe(topTable);

topTable.querySelector('thead').addEventListener('click', (e) => {
  const b = /** @type {HTMLElement} */ (/** @type {Element} */ (e.target).closest('[data-sort]'));
  if (!b) return;
  const key = b.dataset.sort;
  const same = topSort.key === key;
  topSort = same ? { key, desc: !topSort.desc } : { key, desc: key !== 'name' };
  if (same && top) renderTop(); // the same rows, the other way round
  else fetchTop();
});
topBody.addEventListener('click', (e) => {
  const tr = /** @type {Element} */ (e.target).closest('tr');
  if (!tr) return;
  applySearch(`^${escapeRE(tr.dataset.name)}$`);
  chart.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
});
$('top-all').addEventListener('click', () => { topAll = true; fetchTop(); });

// ---- sharing ----

wireCopyLink($('copy-link'), writeURL);

// ---- for tests and the console ----

/** The frames drawn below the zoomed one, as zoom paths. */
function drawnFrames() {
  if (!tree || !graph.drawn) return [];
  return graph.drawn.filter((i) => i !== graph.zoom).map((i) => tree.path(i));
}

window.viewer = {
  graph, reload, frameRect, drawnFrames, describe: (path) => { const i = tree.resolve(path); return describe(i, false).map((e) => e.textContent); },
  get tree() { return tree; }, get timings() { return timing.loadTimings(); }, get zoomTimings() { return timing.zoomTimings(); },
};

setReload(reload);

readURL();
fitChart();
reload().then(fitChart).catch(() => {});
