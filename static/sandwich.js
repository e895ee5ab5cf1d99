// sandwich.js: one function's callers above and callees below, from
// sandwich.json (two trees in the flame.json format, each rooted at the
// function, built on the server from every sample). The callers tree is drawn
// root at the bottom so the function sits in the middle of the sandwich.
// Clicking a frame makes that function the sandwiched one (URL fn=).

import { Tree, FlameGraph, formatValue, formatPct } from './flame.js';

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

async function load() {
  try {
    const resp = await fetch(config.dataURL, { headers: { Accept: 'application/json' } });
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}: ${(await resp.text()).slice(0, 300)}`);
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
  document.body.dataset.ready = '1';
}

const si = $('si');
if (si) si.addEventListener('change', () => { const p = new URLSearchParams(location.search); p.set('si', si.value); location.search = p.toString(); });

window.viewer = { callers, callees, get data() { return data; } };
load();
