// timeline.js draws the flame page's time axis: the samples of the page's
// sample type per thread over time, as a heatmap (timeline.json, built on the
// server from each sample's time bucket). Dragging across it selects a range;
// the range is the t= parameter of the URL (seconds since the first sample,
// "1.5-2.25"), which every view honours, so a link to "the slow second" shows
// it. The page's view module redraws for it: page.js's setViewParam
// refetches and redraws the graph and its table; on the time-order page
// (the section's data-view="timeorder"), timeorder.js's. A view that
// changes the range itself (a click in the time-order view) says so with a
// "viewer:range" event, and the selection follows. The flame page's sample
// type selector says its choice with a "viewer:si" event: the timeline
// reloads for it.
//
// Nothing shows for a profile without sample times.

import { $, readConfig, on, onPixelRatioChange } from './common.js';

const box = $('timeline');
const config = readConfig('flame-config');
const view = box && box.dataset.view === 'timeorder' ? import('./timeorder.js') : import('./page.js');
const ROW = 14; // px per thread row
const AXIS = 18;
const LABEL = 150; // px of the name column
let data = null;
let range = parseRange(new URLSearchParams(location.search).get('t'));
let drag = null; // {x0, x1} in css px while dragging
let timings = []; // per range change: ms until the graph was redrawn (benchmarks)
let si = null; // the sample type chosen on the page since it loaded ("viewer:si")
let loads = 0; // load() calls: a slower answer for an older si is dropped

function parseRange(t) {
  const m = /^([0-9.]+)-([0-9.]+)$/.exec(t || '');
  if (!m) return null;
  const from = Number(m[1]), to = Number(m[2]);
  return to > from ? { from, to } : null;
}

function fmtSec(s) {
  if (!data) return `${s}`;
  const step = data.bucket_ns / 1e9;
  const digits = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step))));
  return s.toFixed(digits);
}

/**
 * The section's data-src, else timeline.json beside the profile's
 * flame.json; null for other trees (the data-type flame graph).
 */
function url() {
  if (box.dataset.src) return box.dataset.src;
  const u = new URL(config.dataURL, location.href);
  if (!/^\/p\/[^/]+\/flame\.json$/.test(u.pathname)) return null;
  u.pathname = u.pathname.replace(/\/flame\.json$/, '/timeline.json');
  const s = si ?? u.searchParams.get('si');
  u.search = s ? `?si=${encodeURIComponent(s)}` : '';
  return u.pathname + u.search;
}

async function load() {
  const u = url();
  if (!u) return;
  const n = ++loads;
  const resp = await fetch(u, { headers: { Accept: 'application/json' } });
  if (!resp.ok || n !== loads) return;
  const d = await resp.json();
  if (n !== loads) return;
  data = d;
  if (!data.rows.length) {
    box.hidden = true;
    return;
  }
  if (!canvas) build();
  fillLabels();
  box.hidden = false;
  draw();
}

let canvas, labels, out, clear;

// build makes the timeline's elements, once.
function build() {
  box.innerHTML = '';
  const head = document.createElement('div');
  head.className = 'timeline-head';
  const h = document.createElement('h2');
  h.textContent = 'Timeline';
  out = document.createElement('output');
  out.className = 'muted';
  out.setAttribute('aria-live', 'polite');
  clear = document.createElement('button');
  clear.type = 'button';
  clear.className = 'button';
  clear.id = 'timeline-clear';
  clear.textContent = 'Whole recording';
  clear.title = 'Show every sample again';
  clear.addEventListener('click', () => select(null));
  head.append(h, out, clear);
  const body = document.createElement('div');
  body.className = 'timeline-body';
  labels = document.createElement('div');
  labels.className = 'timeline-labels';
  labels.style.width = `${LABEL}px`;
  canvas = document.createElement('canvas');
  canvas.id = 'timeline-canvas';
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', 'Samples per thread over time; drag to select a time range');
  body.append(labels, canvas);
  box.append(head, body);
  canvas.addEventListener('pointerdown', (e) => {
    canvas.setPointerCapture(e.pointerId);
    drag = { x0: e.offsetX, x1: e.offsetX };
    draw();
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag) return;
    drag.x1 = e.offsetX;
    draw();
  });
  canvas.addEventListener('pointerup', (e) => {
    if (!drag) return;
    drag.x1 = e.offsetX;
    const w = canvas.clientWidth;
    const a = Math.max(0, Math.min(drag.x0, drag.x1)) / w;
    const b = Math.min(w, Math.max(drag.x0, drag.x1)) / w;
    drag = null;
    const n = data.total.length;
    // Snap to whole buckets: a click selects the bucket under it.
    const i0 = Math.min(n - 1, Math.floor(a * n));
    const i1 = Math.max(i0 + 1, Math.ceil(b * n));
    const step = data.bucket_ns / 1e9;
    select({ from: +(i0 * step).toFixed(9), to: +(i1 * step).toFixed(9) });
  });
  new ResizeObserver(() => draw()).observe(canvas);
  onPixelRatioChange(() => draw());
}

// fillLabels names data's thread rows.
function fillLabels() {
  labels.replaceChildren(...data.rows.map((r) => {
    const d = document.createElement('div');
    d.textContent = r.name;
    d.title = `${r.name}: ${r.value} ${data.unit}`;
    d.style.height = `${ROW}px`;
    return d;
  }));
}

/** Selects r ({from, to} in seconds, or null for everything) and redraws the views. */
export async function select(r) {
  range = r;
  draw();
  const t0 = performance.now();
  const t = r ? `${r.from}-${r.to}` : '';
  keepRange(t);
  await (await view).setViewParam('t', t);
  timings.push(performance.now() - t0);
}

/**
 * Carries range t ('' for none) through the page's forms that show the
 * view again: the Filters form gets a hidden t when it had none, and a
 * cleared range's t is disabled, so that it is not sent.
 */
function keepRange(t) {
  const filters = $('filters');
  if (filters && t && !filters.querySelector('input[name=t]')) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = 't';
    filters.prepend(input);
  }
  for (const el of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[type=hidden][name=t]'))) {
    el.value = t;
    el.disabled = !t;
  }
}

function draw() {
  if (!canvas) return;
  const rows = data.rows.length;
  const css = { w: canvas.clientWidth || 600, h: rows * ROW + AXIS };
  const dpr = window.devicePixelRatio || 1;
  canvas.style.height = `${css.h}px`;
  if (canvas.width !== Math.round(css.w * dpr) || canvas.height !== Math.round(css.h * dpr)) {
    canvas.width = Math.round(css.w * dpr);
    canvas.height = Math.round(css.h * dpr);
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, css.w, css.h);
  const n = data.total.length;
  const bw = css.w / n;
  let peak = 1;
  for (const r of data.rows) for (const v of r.counts) peak = Math.max(peak, v);
  data.rows.forEach((r, y) => {
    g.fillStyle = y % 2 ? '#f6f3ef' : '#ffffff';
    g.fillRect(0, y * ROW, css.w, ROW);
    r.counts.forEach((v, i) => {
      if (!v) return;
      // Square root: a thread at a quarter of the peak is still plainly seen.
      const a = 0.15 + 0.85 * Math.sqrt(v / peak);
      g.fillStyle = `rgba(194, 65, 12, ${a.toFixed(3)})`;
      g.fillRect(Math.floor(i * bw), y * ROW + 1, Math.max(1, Math.ceil(bw)), ROW - 2);
    });
  });
  // Axis: about one tick per 100 px, at 1, 2 or 5 × 10^k seconds.
  const span = data.span_ns / 1e9;
  const want = span / Math.max(1, css.w / 100);
  const p10 = 10 ** Math.floor(Math.log10(want));
  const tick = [1, 2, 5, 10].map((m) => m * p10).find((s) => s >= want);
  g.fillStyle = '#4f4842';
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'top';
  const ay = rows * ROW;
  const digits = Math.max(0, -Math.floor(Math.log10(tick)));
  for (let s = 0; s <= span + 1e-12; s += tick) {
    const x = (s / span) * css.w;
    g.fillRect(Math.round(x), ay, 1, 4);
    const label = `${s.toFixed(digits)} s`;
    const tw = g.measureText(label).width;
    g.fillText(label, Math.min(Math.max(0, x - tw / 2), css.w - tw), ay + 5);
  }
  // The selection: everything outside it dimmed.
  let sel = null;
  if (drag) sel = [Math.min(drag.x0, drag.x1), Math.max(drag.x0, drag.x1)];
  else if (range) sel = [(range.from / span) * css.w, (range.to / span) * css.w];
  if (sel) {
    g.fillStyle = 'rgba(31, 27, 24, 0.28)';
    g.fillRect(0, 0, sel[0], ay);
    g.fillRect(sel[1], 0, css.w - sel[1], ay);
    g.fillStyle = '#1d1a17';
    g.fillRect(Math.round(sel[0]), 0, 1, ay);
    g.fillRect(Math.round(sel[1]), 0, 1, ay);
  }
  const total = `${fmtSec(span)} s in ${n} buckets of ${fmtSec(data.bucket_ns / 1e9)} s`;
  out.textContent = range ? `Showing ${fmtSec(range.from)}–${fmtSec(range.to)} s of ${total}` : `Whole recording: ${total}. Drag to select a range.`;
  clear.hidden = !range;
}

// The page shows another sample type: so does the timeline.
on('si', (s) => {
  si = s;
  load().catch(() => {});
});

// The view chose range r (seconds, or null): the selection shows it.
on('range', (r) => {
  range = r;
  draw();
});

window.viewerTimeline = { select, get data() { return data; }, get timings() { return timings; } };

if (box) load().catch(() => {});
