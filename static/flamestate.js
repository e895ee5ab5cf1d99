// flamestate.js: the flame graph page's shared state, what its other
// modules read and ask of it: the graph, the tree drawn now, where a frame
// is drawn, and reload(), which refetches flame.json and redraws keeping
// zoom and search (symbolize.js, when a copy with more names is stored).
// page.js owns the state: it sets the tree it draws (setTree) and the
// reload it does (setReload); framemenu.js and symbolize.js import from
// here, not from page.js. Nothing here measures: the page's timings, for
// the benchmarks, are pagetimings.js's.

import { FlameGraph } from './flame.js';
import { $ } from './common.js';

/** The page's flame graph. */
export const graph = new FlameGraph($('chart'), $('flame'), $('flame-hover'));

/** @type {import('./flame.js').Tree | null} */
let tree = null;

/** The tree drawn now, or null before the first load. */
export function currentTree() { return tree; }

/**
 * Makes t the tree drawn now (page.js, which draws it).
 * @param {import('./flame.js').Tree} t
 */
export function setTree(t) { tree = t; }

/** @type {() => Promise<void>} */
let reloader = () => Promise.reject(new Error('the flame page has not loaded'));

/** Refetches flame.json and redraws, keeping zoom, search and mode. */
export function reload() { return reloader(); }

/**
 * Sets what reload() does (page.js, once it is evaluated: before any
 * other module's code runs on an event).
 * @param {() => Promise<void>} fn
 */
export function setReload(fn) { reloader = fn; }

/**
 * Where the frame at path (names below the root) is drawn, in viewport px,
 * or null when it is not drawn.
 * @param {string[]} path
 */
export function frameRect(path) {
  if (!tree) return null;
  const i = tree.resolve(path);
  if (tree.path(i).length !== path.length) return null;
  const r = graph.rectOf(i);
  if (!r) return null;
  const c = graph.overlay.getBoundingClientRect();
  return { x: c.left + r.x, y: c.top + r.y, width: r.w, height: r.h };
}
