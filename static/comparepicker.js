// comparepicker.js: the flame page's compare picker lists recent profiles
// to diff this one against, each a link to /p/OTHER/diff/THIS (the other as
// the base). The list is the server's recent uploads (/api/recent, every replica's), which
// with an upload token needs it, as the server's other listings do; without
// it, the uploads this browser made (the upload page's localStorage list)
// and a line saying how to see the server's. Asked for when the Filters
// box is first opened.

const pop = /** @type {HTMLDetailsElement} */ (document.getElementById('filters-pop'));
const box = document.getElementById('compare-recent');
const form = document.getElementById('compare');
const self = (location.pathname.match(/^\/p\/([a-z2-7]{20})/) || [])[1];

function ownUploads() {
  try {
    const v = JSON.parse(localStorage.getItem('viewer.recent') || '[]');
    return Array.isArray(v) ? v.map((r) => ({ id: (String(r.url || '').match(/\/p\/([a-z2-7]{20})/) || [])[1], name: r.name, at: r.at })).filter((r) => r.id) : [];
  } catch { return []; }
}

function diffHref(base) {
  const u = new URL(`/p/${base}/diff/${self}`, location.href);
  const si = form && /** @type {HTMLInputElement} */ (form.querySelector('input[name=si]'));
  if (si && si.value) u.searchParams.set('si', si.value);
  // The filters and time range the page shows now (its URL follows them).
  const here = new URLSearchParams(location.search);
  for (const k of ['f', 'i', 'h', 's', 't']) {
    const v = here.get(k);
    if (v) u.searchParams.set(k, v);
  }
  return u.pathname + u.search;
}

function show(list, note) {
  const rows = list.filter((r) => r.id !== self);
  const items = rows.map((r) => {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = diffHref(r.id);
    a.dataset.id = r.id;
    a.textContent = r.name || r.id;
    const when = document.createElement('span');
    when.className = 'muted';
    const t = r.uploaded ? new Date(r.uploaded) : r.at ? new Date(r.at) : null;
    when.textContent = (t && !isNaN(t.getTime()) ? ' · ' + t.toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'short' }) : '') + ' · ' + r.id;
    li.append(a, when);
    return li;
  });
  const head = document.createElement('p');
  head.className = 'muted';
  head.textContent = rows.length ? 'Or diff against a recent profile (it becomes the base):' : 'No other recent profile to diff against.';
  const ul = document.createElement('ul');
  ul.className = 'recent-profiles';
  ul.append(...items);
  box.replaceChildren(head, ul);
  if (note) {
    const p = document.createElement('p');
    p.className = 'muted';
    p.append(note + ' ');
    const a = document.createElement('a');
    a.href = '/login';
    a.textContent = 'Sign in';
    p.append(a);
    box.append(p);
  }
  box.hidden = false;
}

let asked = false;
async function load() {
  if (asked || !box || !self) return;
  asked = true;
  try {
    const resp = await fetch('/api/recent', { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    if (resp.status === 401) {
      show(ownUploads(), 'This list is your browser\'s own uploads: this server lists its recent profiles only to those with its upload token.');
      return;
    }
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
    const body = await resp.json();
    const seen = new Set();
    const list = [...body.profiles, ...ownUploads()].filter((r) => !seen.has(r.id) && seen.add(r.id));
    show(list);
  } catch (err) {
    box.textContent = `Could not list recent profiles: ${err.message}`;
    box.hidden = false;
  }
}
if (pop) {
  pop.addEventListener('toggle', () => { if (pop.open) load(); });
  if (pop.open) load();
}
