// timeorder.js draws the time-order view (/p/ID/time): for each of the
// busiest threads, its samples' stacks over time, outermost frame at the
// top (speedscope's "time order", the Firefox Profiler's stack chart).
// The server lays the range out for the chart's width (time.json: a column
// per time bucket or pixel, consecutive stacks' common frames merged into
// boxes, boxes too narrow to see left out), so what is fetched and drawn
// is bounded by the width, not by the samples.
//
// The range is the timeline's (timeline.js, the t= parameter): a range
// chosen there calls setViewParam here; a box clicked zooms to its time
// span, which becomes t= and the timeline's selection ("viewer:range").
// Colors and names are the flame graph's (common.js, flame.js).

import { $, readConfig, getJSON, tooltipRow, placeTooltip, emit, onPixelRatioChange, keepNav, withParam } from './common.js';
import { formatValue, frameColor, fitLabel } from './flame.js';

const config = readConfig('timeorder-config');
const chart = $('timeorder-chart');
const canvas = /** @type {HTMLCanvasElement} */ ($('timeorder-canvas'));
const overlay = /** @type {HTMLCanvasElement} */ ($('timeorder-hover')); // the hovered box's outline, drawn apart from the boxes
const tip = $('timeorder-tip');
const status = $('timeorder-status');
const scope = $('timeorder-scope');
const outBtn = $('timeorder-out');
const none = $('timeorder-none');
const section = $('timeorder');

const ROW = 16; // px per frame
const HEAD = 20; // px of a thread's name line
const GAP = 10; // px between threads
const FONT = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';
const MAX_CANVAS_PX = 30000;

let data = null;
/** @type {any[] & { height?: number }} */
let lanes = []; // per thread: {top, th, byDepth: per depth, the box offsets (into th.boxes) by start}
let range = parseRange(new URLSearchParams(location.search).get('t'));
const back = []; // the ranges before each click, for Zoom out
let generation = 0;
let loads = 0;
let hover = null; // {lane, k}
let charWidth = 0;
let colors = []; // per name index of data: its fill

function parseRange(t) {
  const m = /^([0-9.]+)-([0-9.]+)$/.exec(t || '');
  if (!m) return null;
  const from = Number(m[1]), to = Number(m[2]);
  return to > from ? { from, to } : null;
}

const rangeParam = (r) => (r ? `${r.from}-${r.to}` : '');

/** Columns to lay out for: the chart's width in CSS pixels. */
function columns() { return Math.max(100, Math.min(4096, Math.round(chart.clientWidth || 1000))); }

async function load() {
  const gen = ++generation;
  const u = new URL(config.dataURL, location.href);
  u.searchParams.set('w', String(columns()));
  if (range) u.searchParams.set('t', rangeParam(range));
  let d;
  try {
    d = await getJSON(u.pathname + u.search);
  } catch (e) {
    if (gen !== generation) return;
    status.textContent = `Could not load the time-order view: ${e.message}`;
    status.hidden = false;
    status.classList.add('error');
    document.body.dataset.ready = '1';
    return;
  }
  if (gen !== generation) return;
  data = d;
  colors = d.names.map((name, nm) => frameColor(name, mappingOf(nm))[0]);
  hover = null;
  loads++;
  document.body.dataset.timeorderLoads = String(loads);
  layout();
  draw();
  document.body.dataset.ready = '1';
}

/**
 * Shows range r ({from, to} in seconds, or null for the whole recording):
 * the URL's t=, the flame graph link's, and the view fetched again.
 * timeline.js calls it (as page.js's on the flame page) with 't'.
 */
export function setViewParam(key, value) {
  if (key !== 't') return Promise.resolve();
  range = parseRange(value);
  const set = (url) => withParam(url, 't', value);
  history.replaceState(history.state, '', set(location.href));
  const a = /** @type {HTMLAnchorElement} */ ($('flame-link'));
  if (a) a.href = set(a.getAttribute('href'));
  keepNav('t', value);
  return load();
}

/** Zooms to r (seconds), remembering the range it leaves for Zoom out. */
function zoomTo(r) {
  back.push(range);
  emit('range', r); // the timeline's selection
  setViewParam('t', rangeParam(r));
}

function zoomOut() {
  if (!back.length) return;
  const r = back.pop();
  emit('range', r);
  setViewParam('t', rangeParam(r));
}

function layout() {
  lanes = [];
  let y = 0;
  for (const th of data.threads) {
    const byDepth = Array.from({ length: th.depth }, () => []);
    for (let k = 0; k < th.boxes.length; k += 5) byDepth[th.boxes[k + 2]].push(k);
    for (const list of byDepth) list.sort((a, b) => th.boxes[a] - th.boxes[b]);
    lanes.push({ top: y, th, byDepth });
    y += HEAD + th.depth * ROW + GAP;
  }
  lanes.height = Math.min(MAX_CANVAS_PX, y);
}

function fmtSec(ns) {
  const step = (data.column_ns || data.bucket_ns || 1e6) / 1e9;
  const digits = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step))));
  return (ns / 1e9).toFixed(digits);
}

function draw() {
  status.classList.remove('error');
  if (!data.bucket_ns) {
    none.hidden = false;
    section.hidden = true;
    return;
  }
  const w = chart.clientWidth || 600;
  const h = Math.max(lanes.height || 0, 40);
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = '#fff';
  g.fillRect(0, 0, w, h);
  g.font = FONT;
  g.textBaseline = 'middle';
  if (!charWidth) charWidth = g.measureText('M').width || 6.6;
  const from = data.from_ns, span = Math.max(1, data.to_ns - data.from_ns);
  const xOf = (ns) => ((ns - from) / span) * w;
  for (const lane of lanes) {
    const { th, top } = lane;
    if (top >= h) break;
    g.fillStyle = '#f6f3ef';
    g.fillRect(0, top, w, HEAD - 2);
    g.fillStyle = '#1d1a17';
    g.fillText(`${th.name} · ${formatValue(th.value, data.unit)}`, 4, top + HEAD / 2 - 1);
    const b = th.boxes;
    for (let k = 0; k < b.length; k += 5) {
      const x0 = xOf(b[k]), x1 = xOf(b[k + 1]);
      const y = top + HEAD + b[k + 2] * ROW;
      if (y + ROW > h) continue;
      const name = data.names[b[k + 3]];
      const bw = x1 - x0;
      g.fillStyle = colors[b[k + 3]];
      g.fillRect(x0, y, Math.max(bw - (bw >= 3 ? 1 : 0), 0.5), ROW - 1);
      if (bw >= charWidth * 3 + 6) {
        const text = fitLabel(name, Math.floor((bw - 6) / charWidth));
        if (text) {
          g.fillStyle = '#1d1a17';
          g.fillText(text, x0 + 3, y + ROW / 2);
        }
      }
    }
  }
  drawHover();
  status.hidden = !!data.threads.length;
  let shown = `${fmtSec(data.from_ns)}–${fmtSec(data.to_ns)} s`;
  if (!data.threads.length) {
    status.textContent = 'No samples in this range: choose another on the timeline, or show the whole recording.';
    // A range past the recording's end is cut to nothing (0–0): name the
    // range asked for and how long the recording is.
    if (range && data.to_ns <= data.from_ns) {
      shown = `${fmtSec(range.from * 1e9)}–${fmtSec(range.to * 1e9)} s`;
      status.textContent = `No samples in ${shown}: the recording is ${fmtSec(data.span_ns)} s long. Choose a range on the timeline, or show the whole recording.`;
    }
  }
  const parts = [range ? `Showing ${shown}` : `Whole recording, ${shown}`,
    `${data.threads.length} thread${data.threads.length === 1 ? '' : 's'}`];
  if (data.other_threads) parts.push(`${data.other_threads} quieter not shown`);
  if (data.column_ns) parts.push(`a column is ${formatValue(data.column_ns, 'nanoseconds')}`);
  if (data.hidden) parts.push(`${data.hidden.toLocaleString('en-US')} boxes too narrow to draw`);
  scope.textContent = parts.join(' · ');
  outBtn.hidden = !back.length;
}

/** Outlines the hovered box on the overlay canvas. */
function drawHover() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  const dpr = window.devicePixelRatio || 1;
  if (overlay.width !== canvas.width || overlay.height !== canvas.height) {
    overlay.width = canvas.width;
    overlay.height = canvas.height;
  }
  overlay.style.width = `${w}px`;
  overlay.style.height = `${h}px`;
  const g = overlay.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  if (!hover || !data) return;
  const b = hover.lane.th.boxes, k = hover.k;
  const from = data.from_ns, span = Math.max(1, data.to_ns - data.from_ns);
  const x0 = ((b[k] - from) / span) * w, x1 = ((b[k + 1] - from) / span) * w;
  g.strokeStyle = '#1d1a17';
  g.lineWidth = 1.5;
  g.strokeRect(x0 + 0.75, hover.lane.top + HEAD + b[k + 2] * ROW + 0.75, Math.max(1, x1 - x0 - 1.5), ROW - 2.5);
}

function mappingOf(nm) {
  const m = data.mapping[nm];
  return m >= 0 ? data.mappings[m] : '';
}

/** The box under (x, y) in canvas CSS pixels: {lane, k}, or null. */
function hit(x, y) {
  if (!data) return null;
  const w = chart.clientWidth || 600;
  const ns = data.from_ns + (x / w) * (data.to_ns - data.from_ns);
  for (const lane of lanes) {
    const d = Math.floor((y - lane.top - HEAD) / ROW);
    if (y < lane.top + HEAD || d >= lane.th.depth) continue;
    const list = lane.byDepth[d];
    const b = lane.th.boxes;
    let lo = 0, hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (b[list[mid]] <= ns) lo = mid + 1; else hi = mid;
    }
    const k = list[lo - 1];
    if (k !== undefined && ns < b[k + 1]) return { lane, k };
    return null;
  }
  return null;
}

function showTip(e, h) {
  const b = h.lane.th.boxes, k = h.k;
  const name = data.names[b[k + 3]];
  tip.replaceChildren();
  const n = document.createElement('div');
  n.className = 'tt-name';
  n.textContent = name;
  tip.append(n);
  const m = mappingOf(b[k + 3]);
  if (m) {
    const md = document.createElement('div');
    md.className = 'tt-mapping';
    md.textContent = m;
    tip.append(md);
  }
  tip.append(
    tooltipRow('Time', `${fmtSec(b[k])}–${fmtSec(b[k + 1])} s`, formatValue(b[k + 1] - b[k], 'nanoseconds')),
    tooltipRow(data.sample_type || 'Value', formatValue(b[k + 4], data.unit)),
    tooltipRow('Thread', h.lane.th.name),
  );
  tip.hidden = false;
  placeTooltip(tip, e);
}

overlay.addEventListener('pointermove', (e) => {
  const h = hit(e.offsetX, e.offsetY);
  const same = h && hover && h.lane === hover.lane && h.k === hover.k;
  if (!same) {
    hover = h;
    drawHover();
  }
  overlay.style.cursor = h ? 'pointer' : '';
  if (h) showTip(e, h); else tip.hidden = true;
});
overlay.addEventListener('pointerleave', () => {
  tip.hidden = true;
  if (hover) {
    hover = null;
    drawHover();
  }
});
overlay.addEventListener('click', (e) => {
  const h = hit(e.offsetX, e.offsetY);
  if (!h) return;
  const b = h.lane.th.boxes;
  // Whole buckets, as the timeline selects: a range keeps the samples
  // whose bucket starts in it.
  const q = data.bucket_ns;
  const from = Math.floor(b[h.k] / q) * q;
  const to = Math.max(from + q, Math.ceil(b[h.k + 1] / q) * q);
  if (from === data.from_ns && to === data.to_ns) return;
  tip.hidden = true;
  zoomTo({ from: +(from / 1e9).toFixed(9), to: +(to / 1e9).toFixed(9) });
});
outBtn.addEventListener('click', zoomOut);
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && !/** @type {Element} */ (e.target).closest('input, select, textarea')) zoomOut();
});

onPixelRatioChange(() => { if (data) draw(); });
let resizeTimer = 0;
let lastWidth = 0;
new ResizeObserver(() => {
  const w = chart.clientWidth;
  if (!data || w === lastWidth) return;
  lastWidth = w;
  draw();
  // Laid out again for the new width once it rests.
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(load, 200);
}).observe(chart);

window.viewerTimeOrder = { get data() { return data; }, get loads() { return loads; }, hit, zoomTo };

lastWidth = chart.clientWidth;
load();
