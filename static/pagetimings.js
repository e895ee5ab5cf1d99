// pagetimings.js: what the flame graph page measures of itself, for the
// browser benchmarks (web/*_bench_test.go: BenchmarkPageDraw's marks, the
// zoom, wheel and time-range benchmarks) and the console. page.js tells it
// when a load, a zoom or the first top table happened; window.viewer's
// timings and zoomTimings (page.js) read them back. Nothing on the page
// depends on what is recorded here.

/**
 * The marks of one fetch (common.js getJSON): when the headers came, the
 * body was read and parsed, in performance.now() ms.
 * @typedef {{ headers?: number, text?: number, parsed?: number, fetched?: number, buildMs?: number }} FetchMarks
 */

/**
 * One load of flame.json (page.js reload), in ms: fetching, its headers,
 * body and parse, building the Tree, drawing it and the rest; nodes drawn;
 * startMs and readyMs since the navigation began.
 * @typedef {{ fetchMs: number, headersMs: number, textMs: number, parseMs: number, buildMs: number,
 *   drawMs: number, restMs: number, nodes: number, startMs: number, readyMs: number }} LoadTimings
 */

/**
 * One zoom, in ms since it began: drawn (ms), its tree fetched and built
 * (0 when none was fetched), the fetch's marks; nodes and the draw's own ms.
 * @typedef {{ ms: number, fetchMs: number, buildMs: number, nodes: number, headersMs: number,
 *   textMs: number, parsedMs: number, drawMs: number }} ZoomTimings
 */

/** @type {LoadTimings | null} */
let load = null; // of the last load
/** @type {ZoomTimings[]} */
const zooms = [];
let zoomStart = 0;
let firstTopMs = 0; // when the top table first showed rows, since the navigation began

/**
 * Records a load begun at t0, its flame.json in hand at t1, its Tree built
 * at t2 and drawn at t3 (performance.now() ms), with the fetch's marks.
 * @param {number} t0 @param {number} t1 @param {number} t2 @param {number} t3
 * @param {FetchMarks} marks @param {number} nodes
 */
export function loaded(t0, t1, t2, t3, marks, nodes) {
  const now = performance.now();
  load = {
    fetchMs: t1 - t0, headersMs: (marks.headers ?? NaN) - t0, textMs: (marks.text ?? NaN) - (marks.headers ?? NaN),
    parseMs: (marks.parsed ?? NaN) - (marks.text ?? NaN), buildMs: t2 - t1, drawMs: t3 - t2, restMs: now - t3, nodes,
    startMs: t0, readyMs: now,
  };
}

/** A zoom begins now; returns its start (performance.now() ms). */
export function zoomBegun() {
  zoomStart = performance.now();
  return zoomStart;
}

/**
 * Records the zoom begun last as drawn now, and returns its ms.
 * @param {number} fetchMs @param {number} buildMs @param {FetchMarks} marks
 * @param {number} nodes @param {number} drawMs the graph's own draw
 */
export function zoomed(fetchMs, buildMs, marks, nodes, drawMs) {
  const ms = performance.now() - zoomStart;
  /** @param {number | undefined} m */
  const since = (m) => (m ? m - zoomStart : 0);
  zooms.push({ ms, fetchMs, buildMs, nodes, headersMs: since(marks.headers), textMs: since(marks.text), parsedMs: since(marks.parsed), drawMs });
  return ms;
}

/**
 * The top table shows rows (n of them) now: the first time is topMs.
 * @param {number} n
 */
export function topShown(n) {
  if (!firstTopMs && n) firstTopMs = performance.now();
}

/** The last load's timings and topMs, or null before the first. */
export function loadTimings() { return load && { ...load, topMs: firstTopMs }; }

/** Every zoom's timings, in order. */
export function zoomTimings() { return zooms; }
