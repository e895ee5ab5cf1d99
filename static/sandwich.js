// sandwich.js: one function's callers above and callees below, from
// sandwich.json (two trees in the flame.json format, each rooted at the
// function, built on the server from every sample). The callers tree is drawn
// root at the bottom so the function sits in the middle of the sandwich.
// Clicking a frame makes that function the sandwiched one (URL fn=). The
// search box highlights matching frames in both (URL q=), and the Flame
// graph link opens the flame graph zoomed at the function on its hottest
// call path (z=, the widest caller at each step).

import { Tree, FlameGraph, formatValue, formatPct } from './flame.js';
import { responseError } from './common.js';

const $ = (id) => document.getElementById(id);
const config = JSON.parse($('sandwich-config').textContent);
const tooltip = $('tooltip');
const status = $('chart-status');
const callers = new FlameGraph($('callers-chart'), $('callers'), $('callers-hover'));
const callees = new FlameGraph($('callees-chart'), $('callees'), $('callees-hover'));
callers.mode = 'flame';
let data = null;

function pick(g) {
  return (e) => {
    const i = g.frameAt(e.offsetX, e.offsetY);
    if (i <= 0 || !g.tree) return;
    const name = g.tree.label(i);
    if (name === '…') return;
    e.stopImmediatePropagation();
    const p = new URLSearchParams(location.search);
    p.set('fn', name);
    location.search = p.toString();
  };
}
for (const g of [callers, callees]) {
  // Capture, so the graph's own click-to-zoom does not run first.
  g.overlay.addEventListener('click', pick(g), true);
  g.onhover = (graph, i, e) => {
    if (i < 0 || !graph.tree || !e) { tooltip.hidden = true; return; }
    const t = graph.tree;
    const name = document.createElement('div');
    name.className = 'tt-name';
    name.textContent = t.label(i);
    const line = document.createElement('div');
    line.className = 'tt-row';
    line.textContent = `${formatValue(t.total[i], t.unit)} · ${formatPct(data.total ? t.total[i] / data.total : 0)} of the profile · ${formatPct(t.rootTotal ? t.total[i] / t.rootTotal : 0)} of ${data.fn}`;
    tooltip.replaceChildren(name, line);
    tooltip.hidden = false;
    tooltip.style.position = 'fixed';
    tooltip.style.transform = `translate(${Math.round(e.clientX + 14)}px, ${Math.round(e.clientY + 16)}px)`;
  };
}

// ---- the function picker: the view's functions (top.json) by self or
// total, filtered by what is typed; choosing one opens its sandwich. ----
const find = /** @type {HTMLInputElement} */ ($('fn-find'));
const order = /** @type {HTMLSelectElement} */ ($('fn-order'));
const list = $('fn-list');
const PICKER_SHOWN = 50;
let functions = null; // top.json, once asked for

async function loadFunctions() {
  if (functions) return functions;
  const resp = await fetch(config.topURL, { headers: { Accept: 'application/json' } });
  if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}: ${await responseError(resp)}`);
  functions = await resp.json();
  return functions;
}

function sandwichURL(name) {
  const p = new URLSearchParams(location.search);
  p.set('fn', name);
  p.delete('q');
  return location.pathname + '?' + p.toString();
}

async function showFunctions() {
  let top;
  try {
    top = await loadFunctions();
  } catch (err) {
    const li = document.createElement('li');
    li.className = 'fn-none';
    li.textContent = `Could not list the functions: ${err.message}`;
    list.replaceChildren(li);
    list.hidden = false;
    return;
  }
  const q = find.value.trim().toLowerCase();
  const col = order.value === 'cum' ? 2 : 1;
  const rows = top.rows.filter((r) => !q || r[0].toLowerCase().includes(q));
  rows.sort((a, b) => Math.abs(b[col]) - Math.abs(a[col]));
  const items = rows.slice(0, PICKER_SHOWN).map((r) => {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = sandwichURL(r[0]);
    a.title = r[0];
    const name = document.createElement('span');
    name.className = 'fn-name';
    name.textContent = r[0];
    const self = document.createElement('span');
    self.className = 'fn-num';
    self.textContent = `self ${formatValue(r[1], top.unit)}`;
    const total = document.createElement('span');
    total.className = 'fn-num';
    total.textContent = `total ${formatValue(r[2], top.unit)}`;
    a.append(name, self, total);
    li.append(a);
    return li;
  });
  if (items.length === 0) {
    const li = document.createElement('li');
    li.className = 'fn-none';
    li.textContent = q ? `No function's name contains "${find.value.trim()}".` : 'No functions in this view.';
    items.push(li);
  } else if (rows.length > items.length) {
    const li = document.createElement('li');
    li.className = 'fn-none';
    li.textContent = `${(rows.length - items.length).toLocaleString('en-US')} more: type to narrow.`;
    items.push(li);
  }
  list.replaceChildren(...items);
  list.hidden = false;
}
find.addEventListener('focus', showFunctions);
find.addEventListener('input', showFunctions);
order.addEventListener('change', () => { showFunctions(); });
find.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') { list.hidden = true; return; }
  if (e.key === 'ArrowDown') { e.preventDefault(); list.querySelector('a')?.focus(); return; }
  if (e.key === 'Enter') {
    const first = list.querySelector('a');
    if (first) { e.preventDefault(); location.href = first.href; }
  }
});
list.addEventListener('keydown', (e) => {
  const a = document.activeElement;
  if (!(a instanceof HTMLAnchorElement)) return;
  const li = a.parentElement;
  if (e.key === 'ArrowDown') { e.preventDefault(); li.nextElementSibling?.querySelector('a')?.focus(); }
  if (e.key === 'ArrowUp') { e.preventDefault(); (li.previousElementSibling?.querySelector('a') || find).focus(); }
  if (e.key === 'Escape') { list.hidden = true; find.focus(); }
});
document.addEventListener('click', (e) => {
  if (!$('fn-picker').contains(/** @type {Node} */ (e.target))) list.hidden = true;
});

async function load() {
  if (!config.dataURL) {
    // No function yet: the picker is the page.
    status.textContent = 'Choose a function in the box above: its callers and callees are drawn here.';
    document.body.dataset.ready = '1';
    find.focus();
    return;
  }
  try {
    const resp = await fetch(config.dataURL, { headers: { Accept: 'application/json' } });
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}: ${await responseError(resp)}`);
    data = await resp.json();
  } catch (err) {
    status.textContent = `Could not load the sandwich: ${err.message}`;
    status.classList.add('error');
    return;
  }
  const unit = data.callees.unit;
  const stats = $('sandwich-stats');
  for (const [k, v] of [['Flat', data.flat], ['Cum', data.cum]]) {
    const d = document.createElement('div');
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = `${formatValue(v, unit)} (${formatPct(data.total ? v / data.total : 0)})`;
    d.append(dt, dd);
    stats.append(d);
  }
  if (data.cum === 0) {
    status.textContent = `No samples pass through ${data.fn} for this sample type (and filters).`;
    return;
  }
  status.hidden = true;
  callers.setTree(new Tree(data.callers));
  callees.setTree(new Tree(data.callees));
  zoomLink(callers.tree);
  applySearch();
  document.body.dataset.ready = '1';
}

/** Points the Flame graph link at the function on its hottest call path. */
function zoomLink(t) {
  const a = /** @type {HTMLAnchorElement} */ ($('flame-at'));
  if (!a || !t || t.length === 0) return;
  // From the function (the callers tree's root) up through the widest
  // caller at each step to the outermost frame: the zoom path reversed.
  const path = [];
  for (let i = 0; ;) {
    path.push(t.label(i));
    let best = -1;
    for (let j = i + 1; j < t.end[i]; j = t.end[j]) if (best < 0 || t.total[j] > t.total[best]) best = j;
    if (best < 0 || t.label(best) === '…') break;
    i = best;
  }
  path.reverse();
  const u = new URL(a.dataset.flameUrl, location.href);
  u.searchParams.delete('z');
  for (const name of path) u.searchParams.append('z', name);
  a.href = u.pathname + u.search;
}

const search = /** @type {HTMLInputElement} */ ($('search'));
const matchOut = $('match');

function applySearch() {
  const q = search.value;
  let re = null;
  if (q) {
    try { re = new RegExp(q, 'i'); } catch { re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i'); }
  }
  let frames = 0;
  for (const g of [callers, callees]) {
    if (!g.tree) continue;
    const m = g.setSearch(re);
    if (m) frames += m.frames;
  }
  matchOut.hidden = !q;
  matchOut.textContent = q ? (frames ? `${frames.toLocaleString('en-US')} frame${frames === 1 ? '' : 's'} match` : 'no match') : '';
  const u = new URL(location.href);
  if (q) u.searchParams.set('q', q); else u.searchParams.delete('q');
  history.replaceState(history.state, '', u.pathname + u.search + u.hash);
}
search.value = new URLSearchParams(location.search).get('q') || '';
search.addEventListener('input', applySearch);
document.addEventListener('keydown', (e) => {
  if (e.key === '/' && !(document.activeElement instanceof HTMLInputElement) && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    search.focus();
  }
});

const si = /** @type {HTMLSelectElement} */ ($('si'));
if (si) si.addEventListener('change', () => { const p = new URLSearchParams(location.search); p.set('si', si.value); location.search = p.toString(); });

window.viewer = { callers, callees, get data() { return data; } };
load();
