// framemenu.js: the flame graph page's frame menu (right-click a frame or a
// top-table row, or the context-menu key on a hovered frame). It links a frame to its sandwich
// view (callers and callees), its source, its annotated disassembly and
// pprof-style filters on it (common.js frameLinks, which the detail strip
// shows too). It reads the drawn graph from flamestate.js.

import { graph, currentTree, frameRect } from './flamestate.js';
import { frameLinks } from './common.js';

const overlay = document.getElementById('flame-hover');
const menu = document.createElement('div');
menu.className = 'frame-menu';
menu.id = 'frame-menu';
menu.setAttribute('role', 'menu');
menu.hidden = true;
document.body.append(menu);

function item(label, href, title) {
  const a = document.createElement('a');
  a.setAttribute('role', 'menuitem');
  a.href = href;
  a.textContent = label;
  if (title) a.title = title;
  return a;
}

function open(i, x, y) {
  const tree = currentTree();
  if (!tree || i <= 0) return false;
  return openFor(tree.label(i), x, y);
}

function openFor(name, x, y) {
  if (!name || name === '…') return false;
  const head = document.createElement('div');
  head.className = 'frame-menu-name';
  head.textContent = name;
  const tree = currentTree();
  const nm = tree ? tree.names.indexOf(name) : -1;
  const mapping = nm >= 0 ? tree.mappingOfName(nm) : '';
  menu.replaceChildren(head, ...frameLinks(name, location.pathname, mapping).map((l) => item(l.label, l.href, l.title)));
  menu.hidden = false;
  // Fixed to the viewport, beside the pointer, kept inside the window.
  const mx = Math.min(x, window.innerWidth - menu.offsetWidth - 4);
  const my = Math.min(y, window.innerHeight - menu.offsetHeight - 4);
  menu.style.transform = `translate(${Math.max(0, Math.round(mx))}px, ${Math.max(0, Math.round(my))}px)`;
  menu.dataset.fn = name;
  const tip = document.getElementById('tooltip');
  if (tip) tip.hidden = true;
  return true;
}

function close() { menu.hidden = true; }

overlay.addEventListener('contextmenu', (e) => {
  const i = graph.frameAt(e.offsetX, e.offsetY);
  if (open(i, e.clientX, e.clientY)) e.preventDefault();
});
overlay.addEventListener('keydown', (e) => {
  if (e.key !== 'ContextMenu' && !(e.shiftKey && e.key === 'F10')) return;
  const i = graph.hover;
  const r = i > 0 ? graph.rectOf(i) : null;
  if (!r) return;
  const c = overlay.getBoundingClientRect();
  if (open(i, c.left + Math.max(0, r.x) + 8, c.top + r.y + r.h)) {
    e.preventDefault();
    menu.querySelector('a').focus();
  }
});
// The top table's rows get the same menu.
const topBody = /** @type {HTMLElement | null} */ (document.querySelector('#top-table tbody'));
if (topBody) {
  topBody.addEventListener('contextmenu', (e) => {
    const tr = /** @type {HTMLElement} */ (e.target).closest('tr');
    if (tr && openFor(tr.dataset.name, e.clientX, e.clientY)) e.preventDefault();
  });
}
document.addEventListener('click', (e) => { if (!menu.contains(/** @type {Node} */ (e.target))) close(); });
document.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(); });

// For tests and the console.
window.viewerFrameMenu = { open: (path) => {
  const i = currentTree().resolve(path);
  const r = frameRect(path);
  return r ? open(i, r.x + 4, r.y + r.height) : false;
} };

// The filter and compare forms reload the page: keep the sample type the
// selector switched to without a reload (page.js).
const siSelect = /** @type {HTMLSelectElement} */ (document.getElementById('si'));
if (siSelect) {
  siSelect.addEventListener('change', () => {
    for (const form of document.querySelectorAll('#filters, #compare')) {
      let input = /** @type {HTMLInputElement} */ (form.querySelector('input[name="si"]'));
      if (!input) {
        input = document.createElement('input');
        input.type = 'hidden';
        input.name = 'si';
        form.prepend(input);
      }
      input.value = siSelect.value;
    }
  });
}
