// page.js wires the flame graph page: it fetches flame.json, hands it to a
// FlameGraph, and keeps the toolbar, breadcrumb, tooltip, top table and the URL
// in step. View state (si, q, z = zoom path, mode) lives in the query string
// via history.replaceState, so a copied link shows the same view.
//
// Zooming fetches flame.json?z=PATH, the subtree compacted at the zoomed
// frame's total, so merged "…" frames open; the top table and the search's
// matched share come from top.json, computed on the server from every sample.
//
// Other modules (on-demand symbolization) import { reload } from this module:
// it refetches flame.json and redraws, keeping zoom and search.

import { Tree, FlameGraph, formatValue, formatPct } from './flame.js';

const $ = (id) => document.getElementById(id);
const config = JSON.parse($('flame-config').textContent);

const chart = $('chart');
const graph = new FlameGraph(chart, $('flame'), $('flame-hover'));
const search = $('search');
const matchOut = $('match');
const tooltip = $('tooltip');
const status = $('chart-status');
const note = $('flame-note');
const crumbs = $('crumbs');
const resetBtn = $('reset');
const siSelect = $('si');
const TOP_ROWS = 100;
// exact: the server has top.json and flame.json?z= for this tree (the
// profile's flame page); otherwise (data types) the table is the drawn tree's.
const exact = !!config.exact;

let dataURL = config.dataURL;
let si = config.si || '';
let siInURL = new URLSearchParams(location.search).has('si');
let tree = null;
let loads = 0;
let timings = null; // of the last load, for benchmarks and the console
let generation = 0;
let topSort = { key: 'flat', desc: true };
let topAll = false;
let tipFor = -1; // node the tooltip content describes
let tipTree = null;
const trees = new Map(); // zoom key → Tree, the few last fetched
const TREES_KEPT = 8;
let zoomGen = 0;
let zoomStart = 0;
let localDraw = 0; // timer: the old tree zoomed, if the fetch is slow
const LOCAL_DRAW_MS = 150;
let zoomTimings = []; // per zoom: ms to its tree drawn, to fetched, to parsed; nodes (benchmarks)
let topGen = 0;
let top = null; // the last top.json

// ---- URL state ----

function readURL() {
  const p = new URLSearchParams(location.search);
  search.value = p.get('q') || '';
  graph.mode = p.get('mode') === 'flame' ? 'flame' : 'icicle';
  graph.zoomPath = p.getAll('z');
  setSearchRE(search.value);
  showMode();
}

function writeURL() {
  const p = new URLSearchParams(location.search);
  for (const k of ['si', 'q', 'z', 'mode']) p.delete(k);
  if (si && siInURL) p.set('si', si);
  if (search.value) p.set('q', search.value);
  for (const name of graph.zoomPath) p.append('z', name);
  if (graph.mode === 'flame') p.set('mode', 'flame');
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

async function getJSON(url, revalidate, marks) {
  const resp = await fetch(url, { headers: { Accept: 'application/json' }, cache: revalidate ? 'no-cache' : 'default' });
  if (marks) marks.headers = performance.now();
  if (!resp.ok) {
    const body = (await resp.text()).trim();
    throw new Error(`${resp.status} ${resp.statusText}${body ? `: ${body.slice(0, 300)}` : ''}`);
  }
  if (!marks) return resp.json();
  const text = await resp.text();
  marks.text = performance.now();
  const json = JSON.parse(text);
  marks.parsed = performance.now();
  return json;
}

function keep(path, t) {
  const k = path.join('\n');
  trees.delete(k);
  trees.set(k, t);
  while (trees.size > TREES_KEPT) trees.delete(trees.keys().next().value);
}

function withParam(url, key, value) {
  const u = new URL(url, location.href);
  u.searchParams.set(key, value);
  return u.pathname + u.search;
}

// ---- loading ----

/** Refetches flame.json and redraws, keeping zoom, search and mode. */
export async function reload() {
  const gen = ++generation;
  zoomGen++; // a zoom fetch under way is for the old tree
  trees.clear();
  const t0 = performance.now();
  const path = graph.zoomPath.slice();
  let json;
  try {
    // After the first load, revalidate: names may have changed on the server.
    json = await getJSON(path.length ? viewURL('flame.json', path) : dataURL, loads > 0);
  } catch (err) {
    if (gen === generation) showStatus(`Could not load the flame graph: ${err.message}`, true);
    throw err;
  }
  if (gen !== generation) return; // a newer reload won
  const t1 = performance.now();
  try {
    tree = new Tree(json);
  } catch (err) {
    showStatus(`Could not draw the flame graph: ${err.message}`, true);
    throw err;
  }
  const t2 = performance.now();
  keep(tree.zoom, tree);
  graph.setTree(tree);
  const t3 = performance.now();
  showStatus(tree.rootTotal > 0 ? '' : 'This profile has no samples for this sample type.', false);
  // The server compacted the tree to its rendering budget: say so.
  if (note) {
    note.textContent = json.compacted ? json.compacted.note : '';
    note.hidden = !json.compacted;
  }
  showCrumbs();
  writeURL();
  fetchTop(loads > 0);
  timings = { fetchMs: t1 - t0, buildMs: t2 - t1, drawMs: t3 - t2, restMs: performance.now() - t3, nodes: tree.length };
  loads++;
  document.body.dataset.loads = String(loads);
  document.body.dataset.ready = '1';
  document.dispatchEvent(new CustomEvent('viewer:drawn', { detail: { loads } }));
}

/**
 * Sets query parameter key of every view (the timeline's t=; '' removes it)
 * in the page's URL, its data and its links, and redraws (static/timeline.js).
 */
export function setViewParam(key, value) {
  const set = (url) => {
    const u = new URL(url, location.href);
    if (value) u.searchParams.set(key, value); else u.searchParams.delete(key);
    return u.pathname + u.search + u.hash;
  };
  config.dataURL = set(config.dataURL);
  dataURL = set(dataURL);
  for (const id of ['svg-link', 'top-link']) {
    const a = $(id);
    if (a) a.href = set(a.getAttribute('href'));
  }
  history.replaceState(history.state, '', set(location.href));
  return reload();
}

function showStatus(text, isError) {
  status.textContent = text;
  status.hidden = !text;
  status.classList.toggle('error', !!isError);
}

// ---- search ----

function escapeRE(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

/** A case-insensitive RegExp for q; text that is not a valid regex is matched literally. */
function compile(q) {
  if (!q) return null;
  try {
    return new RegExp(q, 'i');
  } catch {
    return new RegExp(escapeRE(q), 'i');
  }
}

function setSearchRE(q) {
  graph.setSearch(compile(q));
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
  // The table after the tree: its fetch and rows would delay the drawing.
  topTable.dataset.state = 'loading';
  clearTimeout(localDraw);
  fetchZoom().finally(() => fetchTop());
  if (document.body.dataset.zoom !== 'loading') return false;
  // A finer tree is on its way, usually within tens of ms: draw the zoom
  // when it arrives. Drawing the old tree zoomed now would take the page's
  // thread (recording, then rasterizing thousands of labels) that the
  // response waits for; only a slow server gets that redraw meanwhile.
  localDraw = setTimeout(() => graph.draw(), LOCAL_DRAW_MS);
  return true;
};

// fetchZoom swaps in the tree compacted at the zoomed frame's total, unless
// the drawn tree has no merged frame below the zoom (then it is exact).
async function fetchZoom() {
  const gen = ++zoomGen;
  zoomStart = performance.now();
  const path = graph.zoomPath.slice();
  let t = trees.get(path.join('\n'));
  if (t) keep(path, t); // most recently used
  let fetchMs = 0;
  let buildMs = 0;
  const marks = {};
  // Above the drawn tree's zoomed frame only its chain is there; below it,
  // merged frames open in a finer tree.
  if (!t && exact && (graph.zoom < tree.zoom.length || tree.hasMerged(graph.zoom))) {
    document.body.dataset.zoom = 'loading';
    try {
      const json = await getJSON(viewURL('flame.json', path), false, marks);
      fetchMs = performance.now() - zoomStart;
      t = new Tree(json);
      buildMs = performance.now() - zoomStart - fetchMs;
    } catch (err) {
      if (gen === zoomGen) {
        clearTimeout(localDraw);
        graph.draw(); // the old tree, zoomed
        document.body.dataset.zoom = 'error';
        showStatus(`Could not load the zoomed flame graph: ${err.message}`, true);
      }
      return;
    }
    keep(path, t);
  }
  if (gen !== zoomGen) return; // zoomed elsewhere meanwhile
  clearTimeout(localDraw);
  if (t && t !== tree) {
    tree = t;
    graph.setTree(t);
    showCrumbs();
    writeURL();
  }
  const ms = performance.now() - zoomStart;
  const since = (m) => (m ? m - zoomStart : 0);
  zoomTimings.push({ ms, fetchMs, buildMs, nodes: tree.length, headersMs: since(marks.headers), textMs: since(marks.text), parsedMs: since(marks.parsed), drawMs: graph.lastDrawMs });
  document.body.dataset.zoom = 'ready';
  document.dispatchEvent(new CustomEvent('viewer:zoomed', { detail: { ms, path: graph.zoomPath } }));
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
    if (tree && graph.zoom !== 0) { graph.zoomTo(0); e.preventDefault(); }
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '/') { e.preventDefault(); search.focus(); search.select(); }
  if (e.key === 'Backspace' && tree && graph.zoom !== 0) { graph.zoomTo(tree.parent[graph.zoom]); e.preventDefault(); }
});

// ---- mode ----

function showMode() {
  for (const b of document.querySelectorAll('[data-mode]')) {
    b.setAttribute('aria-pressed', String(b.dataset.mode === graph.mode));
  }
  chart.classList.toggle('flame-mode', graph.mode === 'flame');
}

for (const b of document.querySelectorAll('[data-mode]')) {
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
    for (const id of ['svg-link', 'top-link']) {
      const a = $(id);
      if (a) a.href = withParam(a.getAttribute('href'), 'si', si);
    }
    writeURL();
    reload().catch(() => {});
  });
}

// ---- tooltip ----

function row(label, value, pct) {
  const r = document.createElement('div');
  r.className = 'tt-row';
  const l = document.createElement('span');
  l.className = 'tt-label';
  l.textContent = label;
  const v = document.createElement('span');
  v.className = 'tt-value';
  v.textContent = value;
  const p = document.createElement('span');
  p.className = 'tt-pct';
  p.textContent = pct;
  r.append(l, v, p);
  return r;
}

graph.onhover = (g, i, e) => {
  if (i < 0 || !tree || !e) { tooltip.hidden = true; return; }
  if (i !== tipFor || tree !== tipTree) {
    fillTooltip(i);
    tipFor = i;
    tipTree = tree;
  }
  tooltip.hidden = false;
  // Place beside the pointer, inside the chart.
  const box = chart.getBoundingClientRect();
  const tw = tooltip.offsetWidth;
  const th = tooltip.offsetHeight;
  let x = e.clientX - box.left + 14;
  let y = e.clientY - box.top + 16;
  if (x + tw > box.width) x = Math.max(0, e.clientX - box.left - tw - 14);
  if (e.clientY + 16 + th > window.innerHeight) y = Math.max(0, e.clientY - box.top - th - 12);
  tooltip.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
};

function fillTooltip(i) {
  const unit = tree.unit;
  const total = tree.total[i];
  const self = tree.self[i];
  const name = document.createElement('div');
  name.className = 'tt-name';
  name.textContent = tree.label(i);
  const parts = [name];
  const mapping = tree.mappingOf(i);
  if (mapping) {
    const m = document.createElement('div');
    m.className = 'tt-mapping';
    m.textContent = mapping;
    parts.push(m);
  }
  parts.push(row('Total', formatValue(total, unit), formatPct(total / tree.rootTotal)));
  parts.push(row('Self', formatValue(self, unit), formatPct(self / tree.rootTotal)));
  const z = graph.zoom;
  if (z !== 0 && tree.depth[i] > tree.depth[z]) {
    parts.push(row('In zoom', '', formatPct(total / tree.total[z])));
  }
  if (tree.label(i) === '…') {
    const n = document.createElement('div');
    n.className = 'tt-note';
    n.textContent = 'Frames too small to draw at this zoom, merged by the server. Click to open them.';
    parts.push(n);
  }
  tooltip.replaceChildren(...parts);
}

// ---- top functions ----

const topTable = $('top-table');
const topBody = topTable.querySelector('tbody');
const topMore = $('top-more');

// The table covers the zoomed frame's subtree, with shares of its total, so
// zooming works like pprof's focus. The server sorts by the column (flat, cum
// descending; name ascending) and sends the first rows; the other direction
// reverses them.
async function fetchTop(revalidate) {
  if (!tree) return;
  const gen = ++topGen;
  topTable.dataset.state = 'loading';
  const extra = { sort: topSort.key };
  if (!topAll) extra.n = TOP_ROWS;
  else if (top) extra.n = Math.max(top.functions, 1);
  if (search.value) extra.q = search.value;
  let json;
  try {
    json = exact ? await getJSON(viewURL('top.json', graph.zoomPath, extra), revalidate) : localTop(extra);
  } catch (err) {
    if (gen === topGen) {
      topTable.dataset.state = 'error';
      $('top-scope').textContent = `Could not load the top table: ${err.message}`;
    }
    return;
  }
  if (gen !== topGen) return;
  top = json;
  renderTop();
  showMatch();
  topTable.dataset.state = 'ready';
  document.dispatchEvent(new CustomEvent('viewer:top'));
}

// localTop is top.json computed from the drawn tree, when there is no top.json.
function localTop(extra) {
  const z = graph.zoom;
  const { key } = topSort;
  const rows = tree.topFunctions(z);
  rows.sort((a, b) => (key === 'name' ? a.name.localeCompare(b.name) : b[key] - a[key]) || a.name.localeCompare(b.name));
  const out = {
    unit: tree.unit, total: tree.rootTotal, zoomTotal: tree.total[z], zoom: tree.path(z), functions: rows.length,
    rows: rows.slice(0, extra.n || rows.length).map((r) => [r.name, r.flat, r.cum]),
  };
  if (extra.q && graph.matched) out.matched = graph.matched.value;
  return out;
}

function renderTop() {
  const t = top;
  const z = t.zoom.length;
  const last = z ? t.zoom[z - 1] : '';
  $('top-scope').textContent = z === 0 ? 'whole profile'
    : `within ${last.startsWith('…<') ? '…' : last} (${formatPct(t.zoomTotal / t.total)} of the profile); shares of the zoomed frame`;
  const { key, desc } = topSort;
  const rows = t.rows.map(([name, flat, cum]) => ({ name, flat, cum }));
  if (desc === (key === 'name')) rows.reverse();
  const frag = document.createDocumentFragment();
  const total = t.zoomTotal;
  const re = graph.re;
  for (const r of rows) {
    const tr = document.createElement('tr');
    tr.dataset.name = r.name;
    if (re) {
      re.lastIndex = 0;
      if (re.test(r.name)) tr.className = 'match';
    }
    for (const [text, cls] of [
      [formatValue(r.flat, t.unit), 'num'], [formatPct(r.flat / total), 'num pct'],
      [formatValue(r.cum, t.unit), 'num'], [formatPct(r.cum / total), 'num pct'],
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
  topMore.hidden = t.functions <= t.rows.length;
  $('top-all').textContent = `Show all ${t.functions.toLocaleString('en-US')}`;
  for (const th of topTable.querySelectorAll('th')) {
    const b = th.querySelector('[data-sort]');
    if (!b) continue;
    if (b.dataset.sort === key) th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
    else th.removeAttribute('aria-sort');
  }
}

topTable.querySelector('thead').addEventListener('click', (e) => {
  const b = e.target.closest('[data-sort]');
  if (!b) return;
  const key = b.dataset.sort;
  const same = topSort.key === key;
  topSort = same ? { key, desc: !topSort.desc } : { key, desc: key !== 'name' };
  if (same && top) renderTop(); // the same rows, the other way round
  else fetchTop();
});
topBody.addEventListener('click', (e) => {
  const tr = e.target.closest('tr');
  if (!tr) return;
  applySearch(`^${escapeRE(tr.dataset.name)}$`);
  chart.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
});
$('top-all').addEventListener('click', () => { topAll = true; fetchTop(); });

// ---- sharing ----

const copyBtn = $('copy-link');
let copyTimer = 0;
copyBtn.addEventListener('click', async () => {
  writeURL();
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
  copyBtn.textContent = ok ? 'Copied' : 'Copy failed';
  clearTimeout(copyTimer);
  copyTimer = setTimeout(() => { copyBtn.textContent = 'Copy link'; }, 1500);
});

// ---- for tests and the console ----

/** Where the frame at path (names below the root) is drawn, in viewport px. */
function frameRect(path) {
  if (!tree) return null;
  const i = tree.resolve(path);
  if (tree.path(i).length !== path.length) return null;
  const r = graph.rectOf(i);
  if (!r) return null;
  const c = graph.overlay.getBoundingClientRect();
  return { x: c.left + r.x, y: c.top + r.y, width: r.w, height: r.h };
}

/** The frames drawn below the zoomed one, as zoom paths. */
function drawnFrames() {
  if (!tree || !graph.drawn) return [];
  return graph.drawn.filter((i) => i !== graph.zoom).map((i) => tree.path(i));
}

window.viewer = {
  graph, reload, frameRect, drawnFrames,
  get tree() { return tree; }, get timings() { return timings; }, get zoomTimings() { return zoomTimings; },
};

readURL();
reload().catch(() => {});
