// diff.js: the differential flame graph page (/p/A/diff/B). diff.json is
// flame.json of the new profile B plus, per node, the base profile A's value
// for the same call path ("base"), A's total ("baseTotal") and the sampling
// events of both totals ("samples", "baseSamples"). Widths are B's; a frame's
// colour is the change of its share of the profile on a fixed scale (full at
// SATURATION), red grew, blue shrank; a change within the sampling noise
// (changeColor) is neutral, so two samplings of one program draw no
// colour. The color switch also
// offers the flame page's schemes (package, binary, heat; color= in the URL). Zoom is kept in the URL (z)
// like the flame graph page, so the page's link reproduces the view.

import { Tree, FlameGraph, formatValue, formatPct } from './flame.js';
import { fitNameCells } from './names.js';
import {
  $, readConfig, responseError, compileSearch, diffColor, tooltipRow, placeTooltip, wireCopyLink, legendEntries, renderLegend,
  fitToWindow,
} from './common.js';

export { diffColor };

const config = readConfig('diff-config');
const chart = $('chart');
const tooltip = $('tooltip');
const status = $('chart-status');
const resetBtn = /** @type {HTMLButtonElement} */ ($('reset'));
const swapLink = /** @type {HTMLAnchorElement} */ ($('swap-link'));

/** Change of node i's share: new share minus base share. */
function delta(t, i) {
  const now = t.rootTotal > 0 ? t.total[i] / t.rootTotal : 0;
  const was = t.baseTotal > 0 ? t.base[i] / t.baseTotal : 0;
  return now - was;
}

/** A change of this much of the total (10 percentage points) is drawn at full strength. */
const SATURATION = 0.10;
/** The legend's stops, in percentage points. */
const STOPS = [1, 3, 10];
/** A change within this many standard errors is sampling noise. */
const NOISE_Z = 3;

/**
 * The sampling noise of a change from share was (of nWas samples) to now
 * (of nNow): NOISE_Z standard errors of the difference of two binomial
 * shares, sqrt(p(1-p)(1/nWas + 1/nNow)) with p the pooled share. 0 when a
 * side's sample count is unknown (no floor).
 */
export function noiseOf(was, now, nWas, nNow) {
  if (!(nWas > 0 && nNow > 0)) return 0;
  const p = (was * nWas + now * nNow) / (nWas + nNow);
  return NOISE_Z * Math.sqrt(Math.max(0, p * (1 - p)) * (1 / nWas + 1 / nNow));
}

/** The fill of a change d of share whose noise is noise: neutral within it, else on the fixed scale. */
export function changeColor(d, noise) {
  if (Math.abs(d) <= noise) return diffColor(0);
  return diffColor(Math.max(-1, Math.min(1, d / SATURATION)));
}

/** The noise of node i of t (shares of each side's total, t.samples and t.baseSamples events). */
function nodeNoise(t, i) {
  const now = t.rootTotal > 0 ? t.total[i] / t.rootTotal : 0;
  const was = t.baseTotal > 0 ? t.base[i] / t.baseTotal : 0;
  return noiseOf(was, now, t.baseSamples, t.samples);
}

/** The diff page's color schemes; 'diff' (the change) is the default. */
const SCHEMES = ['diff', 'package', 'binary', 'heat'];

class DiffGraph extends FlameGraph {
  constructor(...args) {
    super(...args);
    this.scheme = 'diff';
  }

  /** @override */
  setScheme(scheme) {
    this.scheme = SCHEMES.includes(scheme) ? scheme : 'diff';
    this.recolor();
    this.draw();
  }

  /** @override */
  setTree(t) {
    this.nodeColor = new Array(t.length);
    for (let i = 0; i < t.length; i++) this.nodeColor[i] = changeColor(delta(t, i), nodeNoise(t, i));
    super.setTree(t);
  }

  /** @override */
  recolor() {
    super.recolor();
    // Per node: the change's fill, and the same at 0.3 opacity for faded
    // ancestors and frames the search does not match.
    const c = this.nodeColor || [];
    this.nodeId = Int32Array.from(c, (x) => this.paint(x));
    this.nodeDimId = Int32Array.from(c, (x) => this.paint(x, 0.3));
    this.textColors = this.scheme === 'diff' ? ['#1d1410', '#1d1410'] : ['#1d1410', '#5c5048'];
  }

  /** @override */
  fillId(i, hit, faded) {
    if (this.scheme !== 'diff') return super.fillId(i, hit, faded); // package, binary or heat
    return faded || (hit && !hit[this.tree.name[i]]) ? this.nodeDimId[i] : this.nodeId[i];
  }
}

const graph = new DiffGraph(chart, $('flame'), $('flame-hover'));
let tree = null;

const search = /** @type {HTMLInputElement} */ ($('search'));
const matchOut = $('match');
const schemeSelect = /** @type {HTMLSelectElement} */ ($('color-scheme'));
const legend = $('legend');

/** The change scale's stops, shrank to grew, for the legend. */
function scaleEntries() {
  const stop = (pp) => ({ label: `${pp > 0 ? '+' : '−'}${Math.abs(pp)} pp`, color: changeColor(pp / 100, 0), key: `${pp}` });
  return [...STOPS.slice().reverse().map((pp) => stop(-pp)),
    { label: 'noise', color: diffColor(0), key: 'noise' }, ...STOPS.map(stop)];
}

/** The legend of the scheme: the change's scale, else the flame page's groups. */
function showLegend() {
  if (!legend || !tree) return;
  renderLegend(legend, graph.scheme === 'diff' ? scaleEntries() : legendEntries(tree, graph.scheme), graph.scheme);
}

if (schemeSelect) {
  schemeSelect.addEventListener('change', () => {
    graph.setScheme(schemeSelect.value);
    showLegend();
    writeURL();
  });
}

/** Shows the matched share in both profiles (nested matches counted once). */
function showMatch() {
  const m = graph.matched;
  if (!m || !tree) { matchOut.hidden = true; matchOut.textContent = ''; return; }
  let base = 0;
  for (let i = 0; i < tree.length;) {
    if (m.hit[tree.name[i]]) { base += tree.base[i]; i = tree.end[i]; } else i++;
  }
  const now = tree.rootTotal ? m.value / tree.rootTotal : 0;
  const was = tree.baseTotal ? base / tree.baseTotal : 0;
  matchOut.hidden = false;
  matchOut.textContent = m.frames === 0 ? 'no match' : `${formatPct(was)} → ${formatPct(now)} (${pp(now - was)})`;
}

function applySearch() {
  graph.setSearch(compileSearch(search.value));
  showMatch();
  writeURL();
}
let searchTimer = 0;
search.addEventListener('input', () => { clearTimeout(searchTimer); searchTimer = setTimeout(applySearch, 120); });

function readURL() {
  const p = new URLSearchParams(location.search);
  graph.zoomPath = p.getAll('z');
  search.value = p.get('q') || '';
  graph.re = compileSearch(search.value);
  graph.scheme = SCHEMES.includes(p.get('color')) ? p.get('color') : 'diff';
  if (schemeSelect) schemeSelect.value = graph.scheme;
}

function writeURL() {
  const p = new URLSearchParams(location.search);
  p.delete('z');
  p.delete('q');
  p.delete('color');
  if (search.value) p.set('q', search.value);
  if (graph.scheme !== 'diff') p.set('color', graph.scheme);
  for (const n of graph.zoomPath) p.append('z', n);
  const qs = p.toString();
  history.replaceState(history.state, '', location.pathname + (qs ? `?${qs}` : ''));
  // The swapped diff keeps the view: search, zoom, colors, si and filters.
  if (swapLink) swapLink.href = new URL(swapLink.href).pathname + (qs ? `?${qs}` : '');
}

graph.onzoom = () => { resetBtn.disabled = graph.zoom === 0; writeURL(); };
resetBtn.addEventListener('click', () => graph.zoomTo(0));
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && tree && graph.zoom !== 0) graph.zoomTo(0);
});

const row = (label, value) => tooltipRow(label, value);

function pp(d) {
  const s = (d * 100).toFixed(2);
  return `${d > 0 ? '+' : ''}${s} pp`;
}

/** The tooltip's text lines for node i (also for tests). */
function describe(i) {
  const t = tree;
  const d = delta(t, i);
  const noise = nodeNoise(t, i);
  return {
    name: t.label(i),
    base: `${formatValue(t.base[i], t.unit)} (${formatPct(t.baseTotal ? t.base[i] / t.baseTotal : 0)})`,
    now: `${formatValue(t.total[i], t.unit)} (${formatPct(t.rootTotal ? t.total[i] / t.rootTotal : 0)})`,
    change: `${pp(d)} · ${t.total[i] - t.base[i] >= 0 ? '+' : '−'}${formatValue(Math.abs(t.total[i] - t.base[i]), t.unit)}`
      + (Math.abs(d) <= noise && d !== 0 ? ` (within the noise, ±${(noise * 100).toFixed(2)} pp)` : ''),
    delta: d,
    noise,
    color: graph.nodeColor[i],
  };
}

graph.onhover = (g, i, e) => {
  if (i < 0 || !tree || !e) { tooltip.hidden = true; return; }
  const d = describe(i);
  const name = document.createElement('div');
  name.className = 'tt-name';
  name.textContent = d.name;
  tooltip.replaceChildren(name, row('Base', d.base), row('New', d.now), row('Change', d.change));
  tooltip.hidden = false;
  tooltip.style.position = 'fixed';
  placeTooltip(tooltip, e);
};

function renderTop(json) {
  const body = $('diff-top').querySelector('tbody');
  const frag = document.createDocumentFragment();
  const tot = json.total || 0;
  const btot = json.baseTotal || 0;
  const share = (v, t) => (t ? v / t : 0);
  for (const [name, flat, cum, bflat, bcum] of json.top || []) {
    const d = share(cum, tot) - share(bcum, btot);
    const noise = noiseOf(share(bcum, btot), share(cum, tot), json.baseSamples, json.samples);
    const sign = Math.abs(d) <= noise ? 'noise' : d > 0 ? 'grew' : 'shrank';
    const tr = document.createElement('tr');
    tr.dataset.name = name;
    for (const [text, cls] of [
      [formatPct(share(bcum, btot)), 'num'], [formatPct(share(cum, tot)), 'num'],
      [pp(d), `num ${sign}`],
      [formatPct(share(bflat, btot)), 'num'], [formatPct(share(flat, tot)), 'num'], [name, 'fn']]) {
      const td = document.createElement('td');
      td.className = cls;
      td.textContent = text;
      if (cls === 'fn') td.title = text;
      tr.append(td);
    }
    frag.append(tr);
  }
  body.replaceChildren(frag);
  fitNameCells(body.querySelectorAll('td.fn'));
}
// The names refit when the table's width changes.
new ResizeObserver(() => fitNameCells($('diff-top').querySelectorAll('tbody td.fn'))).observe($('diff-top'));

async function load() {
  let json;
  try {
    const resp = await fetch(config.dataURL, { headers: { Accept: 'application/json' } });
    if (!resp.ok) throw new Error(await responseError(resp)); // the heading names the cause
    json = await resp.json();
    tree = new Tree(json);
    tree.base = Float64Array.from(json.base || []);
    tree.baseTotal = json.baseTotal || 0;
    tree.samples = json.samples || 0;
    tree.baseSamples = json.baseSamples || 0;
    if (tree.base.length !== tree.length) throw new Error('diff.json: base has a value per node');
  } catch (err) {
    status.textContent = `Could not load the diff: ${err.message}`;
    status.classList.add('error');
    return;
  }
  graph.setTree(tree);
  resetBtn.disabled = graph.zoom === 0;
  status.hidden = tree.rootTotal > 0 || tree.baseTotal > 0;
  status.textContent = status.hidden ? '' : 'Neither profile has samples for this sample type.';
  renderTop(json);
  showLegend();
  showMatch();
  writeURL();
  document.body.dataset.ready = '1';
}

wireCopyLink($('copy-link'), writeURL);

const si = /** @type {HTMLSelectElement} */ ($('si'));
if (si) {
  si.addEventListener('change', () => {
    const p = new URLSearchParams(location.search);
    p.set('si', si.value);
    location.search = p.toString();
  });
}

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

window.viewer = {
  graph, frameRect,
  get tree() { return tree; },
  /** describe(path) → the tooltip's values and colour of that frame. */
  describe(path) { const i = tree.resolve(path); return tree.path(i).length === path.length ? describe(i) : null; },
};

// The graph scrolls in its own pane, the table beside it (below on a phone).
const fitChart = fitToWindow(chart, document.querySelectorAll('.page-head, .toolbar, #legend, .diff-note'));

readURL();
fitChart();
load().then(fitChart);
