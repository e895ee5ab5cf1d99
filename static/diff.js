// diff.js: the differential flame graph page (/p/A/diff/B). diff.json is
// flame.json of the new profile B plus, per node, the base profile A's value
// for the same call path ("base") and A's total ("baseTotal"). Widths are B's;
// a frame's colour is the change of its share of the profile: red grew, blue
// shrank, the most changed frame at full strength; the color switch also
// offers the flame page's schemes (package, binary, heat; color= in the URL). Zoom is kept in the URL (z)
// like the flame graph page, so the page's link reproduces the view.

import { Tree, FlameGraph, formatValue, formatPct } from './flame.js';
import {
  $, readConfig, responseError, compileSearch, diffColor, tooltipRow, placeTooltip, wireCopyLink, legendEntries, renderLegend,
} from './common.js';

export { diffColor };

const config = readConfig('diff-config');
const chart = $('chart');
const tooltip = $('tooltip');
const status = $('chart-status');
const resetBtn = $('reset');

/** Change of node i's share: new share minus base share. */
function delta(t, i) {
  const now = t.rootTotal > 0 ? t.total[i] / t.rootTotal : 0;
  const was = t.baseTotal > 0 ? t.base[i] / t.baseTotal : 0;
  return now - was;
}

/** The diff page's color schemes; 'diff' (the change) is the default. */
const SCHEMES = ['diff', 'package', 'binary', 'heat'];

class DiffGraph extends FlameGraph {
  constructor(...args) {
    super(...args);
    this.scheme = 'diff';
  }

  setScheme(scheme) {
    this.scheme = SCHEMES.includes(scheme) ? scheme : 'diff';
    this.recolor();
    this.draw();
  }

  setTree(t) {
    let max = 0;
    for (let i = 1; i < t.length; i++) max = Math.max(max, Math.abs(delta(t, i)));
    this.maxDelta = max;
    this.nodeColor = new Array(t.length);
    for (let i = 0; i < t.length; i++) this.nodeColor[i] = diffColor(max > 0 ? delta(t, i) / max : 0);
    super.setTree(t);
  }

  recolor() {
    super.recolor();
    // Per node: the change's fill, and the same at 0.3 opacity for faded
    // ancestors and frames the search does not match.
    const c = this.nodeColor || [];
    this.nodeId = Int32Array.from(c, (x) => this.paint(x));
    this.nodeDimId = Int32Array.from(c, (x) => this.paint(x, 0.3));
    this.textColors = this.scheme === 'diff' ? ['#1d1410', '#1d1410'] : ['#1d1410', '#5c5048'];
  }

  fillId(i, hit, faded) {
    if (this.scheme !== 'diff') return super.fillId(i, hit, faded); // package, binary or heat
    return faded || (hit && !hit[this.tree.name[i]]) ? this.nodeDimId[i] : this.nodeId[i];
  }
}

const graph = new DiffGraph(chart, $('flame'), $('flame-hover'));
let tree = null;

const search = $('search');
const matchOut = $('match');
const schemeSelect = $('color-scheme');
const legend = $('legend');

/** The legend of the scheme: red and blue for the change, else the flame page's groups. */
function showLegend() {
  if (!legend || !tree) return;
  const entries = graph.scheme === 'diff'
    ? [{ label: 'grew', color: diffColor(1), key: 'grew' }, { label: 'shrank', color: diffColor(-1), key: 'shrank' },
      { label: 'unchanged', color: diffColor(0), key: 'unchanged' }]
    : legendEntries(tree, graph.scheme);
  renderLegend(legend, entries, graph.scheme);
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
  return {
    name: t.label(i),
    base: `${formatValue(t.base[i], t.unit)} (${formatPct(t.baseTotal ? t.base[i] / t.baseTotal : 0)})`,
    now: `${formatValue(t.total[i], t.unit)} (${formatPct(t.rootTotal ? t.total[i] / t.rootTotal : 0)})`,
    change: `${pp(d)} · ${t.total[i] - t.base[i] >= 0 ? '+' : '−'}${formatValue(Math.abs(t.total[i] - t.base[i]), t.unit)}`,
    delta: d,
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
    const tr = document.createElement('tr');
    tr.dataset.name = name;
    for (const [text, cls] of [
      [formatPct(share(bcum, btot)), 'num'], [formatPct(share(cum, tot)), 'num'],
      [pp(d), `num ${d > 0 ? 'grew' : d < 0 ? 'shrank' : ''}`],
      [formatPct(share(bflat, btot)), 'num'], [formatPct(share(flat, tot)), 'num'], [name, 'fn']]) {
      const td = document.createElement('td');
      td.className = cls;
      td.textContent = text;
      tr.append(td);
    }
    frag.append(tr);
  }
  body.replaceChildren(frag);
}

async function load() {
  let json;
  try {
    const resp = await fetch(config.dataURL, { headers: { Accept: 'application/json' } });
    if (!resp.ok) throw new Error(await responseError(resp)); // the heading names the cause
    json = await resp.json();
    tree = new Tree(json);
    tree.base = Float64Array.from(json.base || []);
    tree.baseTotal = json.baseTotal || 0;
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

const si = $('si');
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

readURL();
load();
