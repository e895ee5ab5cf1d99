// names.js: function and package names written to fit a column or a
// legend, still telling rows apart. A name is shortened the way a profiler
// user reads it (Go's [go.shape.*] type arguments, C++ parameters and
// template arguments to '…', then the package or namespace prefix), then
// cut in its middle; two rows never read alike: where two shortened names
// would, each keeps the part of its name where it differs from the other.
// The callers keep the whole name in the element's title.

const ELL = '…';

/**
 * The short forms of a function name, each shorter than the one before:
 * Go's instantiation arguments ([go.shape.int]) as '[…]'; C++ parameters
 * and template arguments as '(…)' and '<…>'; then its package path (Go
 * directories, Java packages, C++ namespaces) dropped one part at a time
 * from the left. The name itself is not among them.
 */
export function shortForms(name) {
  const out = [];
  let s = name;
  // add takes f as the next form when it is shorter; false when it is not.
  const add = (f) => {
    if (f.length >= s.length) return false;
    out.push(f);
    s = f;
    return true;
  };
  add(collapseIf(s, '[', ']', (inner) => inner.includes('go.shape.')));
  if (s.includes('::')) {
    const params = s.match(/^(.*?\()(.+)(\)(?: const| volatile| &| &&)*)$/s);
    if (params && balanced(params[2], '(', ')')) add(`${params[1]}${ELL}${params[3]}`);
    add(collapseIf(s, '<', '>', () => true));
    // Namespaces, outermost first, down to the class and the function.
    for (;;) {
      const parts = splitTop(s.startsWith(ELL) ? s.slice(ELL.length + 2) : s, '::');
      if (parts.length <= 2 || !add(`${ELL}::${parts.slice(1).join('::')}`)) break;
    }
    return out;
  }
  add(collapseIf(s, '[', ']', () => true)); // other Go type arguments
  // Go: the import path's directories, then the package's own name stays.
  for (;;) {
    const cut = s.search(/[(\[]/);
    const head = cut > 0 ? s.slice(0, cut) : s;
    const slash = head.indexOf('/', s.startsWith(`${ELL}/`) ? ELL.length + 1 : 0);
    if (slash <= 0 || !add(`${ELL}${s.slice(slash)}`)) break;
  }
  // Java (and Kotlin, Scala) packages: lowercase parts before a class name.
  const java = s.match(/^((?:[a-z_$][\w$]*\.){2,})([A-Z][\w$]*(?:[.$][\w$<>]+)*)$/);
  if (java && !s.includes('/')) {
    const pkgs = java[1].split('.').filter(Boolean);
    for (let k = 1; k <= pkgs.length; k++) add(`${ELL}${k < pkgs.length ? pkgs.slice(k).join('.') + '.' : ''}${java[2]}`);
  }
  return out;
}

// collapseIf replaces what each outermost open…close pair of s holds with
// '…' when keep(inner) says so; s itself when its pairs do not balance.
function collapseIf(s, open, close, keep) {
  let depth = 0;
  let out = '';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === open) {
      if (depth++ === 0) start = i;
      continue;
    }
    if (ch === close && depth > 0) {
      if (--depth === 0) {
        const inner = s.slice(start + 1, i);
        out += keep(inner) ? `${open}${ELL}${close}` : s.slice(start, i + 1);
      }
      continue;
    }
    if (depth === 0) out += ch;
  }
  return depth === 0 ? out : s;
}

function balanced(s, open, close) {
  let depth = 0;
  for (const ch of s) {
    if (ch === open) depth++;
    else if (ch === close && --depth < 0) return false;
  }
  return depth === 0;
}

// splitTop splits s at sep outside <…> and (…).
function splitTop(s, sep) {
  const out = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '<' || ch === '(') depth++;
    else if ((ch === '>' || ch === ')') && depth > 0) depth--;
    else if (depth === 0 && s.startsWith(sep, i)) {
      out.push(s.slice(from, i));
      from = i + sep.length;
      i += sep.length - 1;
    }
  }
  out.push(s.slice(from));
  return out;
}

// keepParts is s with only the character ranges spans ([from, to) pairs)
// kept, each gap between them written '…'.
function keepParts(s, spans) {
  const sorted = spans.filter(([a, b]) => b > a).map(([a, b]) => [Math.max(0, a), Math.min(s.length, b)]).sort((x, y) => x[0] - y[0]);
  const merged = [];
  for (const [a, b] of sorted) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  let out = '';
  let at = 0;
  for (const [a, b] of merged) {
    if (a > at) out += ELL;
    out += s.slice(a, b);
    at = b;
  }
  if (at < s.length) out += ELL;
  return out.replace(/…{2,}/g, ELL); // s's own '…' beside a gap
}

// cut is s written in room (width measures a text): the most of it that
// fits, its middle replaced by '…', keeping first the spans of must
// ([from, to) pairs: where it differs from other rows' names), then its
// end (the function's own name), then (in a column of 40 characters or
// more) a quarter of the rest from its start.
function cut(s, room, width, must = []) {
  const narrow = room < 40 * width('0');
  const at = (k) => {
    let left = k;
    const spans = [];
    for (const [a, b] of must) {
      const take = Math.min(b - a, left);
      spans.push([a, a + take]);
      left -= take;
    }
    const head = narrow ? 0 : Math.floor(left / 4);
    spans.push([0, head], [s.length - (left - head), s.length]);
    return keepParts(s, spans);
  };
  let lo = 0;
  let hi = s.length - 1; // at(lo) fits (or is the shortest)
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (width(at(mid)) <= room) lo = mid; else hi = mid - 1;
  }
  return at(lo);
}

// differs is the spans of s that tell it from each of others: for each,
// the word (letters, digits, '_') in which they first differ.
function differs(s, others) {
  const spans = [];
  for (const o of others) {
    if (o === s) continue;
    let a = 0;
    while (a < s.length && a < o.length && s[a] === o[a]) a++;
    if (a >= s.length) a = s.length - 1;
    let from = a;
    while (from > 0 && /\w/.test(s[from - 1])) from--;
    let to = a + 1;
    while (to < s.length && /\w/.test(s[to]) && to - from < 16) to++;
    if (!spans.some(([x, y]) => x <= from && to <= y)) spans.push([from, to]);
  }
  return spans.sort((x, y) => x[0] - y[0]);
}

// fitOne is name written in room: itself, else its first short form that
// fits, else its last one cut in the middle; with the level of the form
// (0 the name, forms.length + 1 a cut).
function fitOne(forms, room, width) {
  for (let l = 0; l < forms.length; l++) if (width(forms[l]) <= room) return { text: forms[l], level: l };
  return { text: cut(forms[forms.length - 1], room, width), level: forms.length };
}

/**
 * names written to fit room (px; width(text) measures one), one text per
 * name, each as long as fits (see shortForms), and no two of distinct
 * names alike: where shortening would make two rows read the same, each
 * is written from the form in which they still differ, keeping the
 * characters where they do.
 */
export function fitNames(names, room, width) {
  const forms = names.map((n) => [n, ...shortForms(n)]);
  const out = names.map((_, i) => fitOne(forms[i], room, width));
  for (let pass = 0; pass < 3; pass++) {
    const groups = new Map();
    out.forEach((o, i) => {
      const g = groups.get(o.text);
      if (g) g.push(i); else groups.set(o.text, [i]);
    });
    let clash = false;
    for (const g of groups.values()) {
      const distinct = new Set(g.map((i) => names[i]));
      if (distinct.size < 2) continue;
      clash = true;
      // The most shortened form in which every name of the group differs.
      const form = (i, l) => forms[i][Math.min(l, forms[i].length - 1)];
      let l = Math.max(...g.map((i) => out[i].level));
      for (; l > 0; l--) {
        const seen = new Set(g.map((i) => form(i, l)));
        if (seen.size === distinct.size) break;
      }
      for (const i of g) {
        const s = form(i, l);
        if (width(s) <= room) { out[i] = { text: s, level: l }; continue; }
        // Where s differs from the others' forms, before as much of the
        // end of the most shortened form (the function's own name, its
        // arguments as '…') as fits, when that reads as the name
        // shortened; else s cut around those words.
        const must = differs(s, g.map((j) => form(j, l)));
        const words = must.map(([a, b]) => s.slice(a, b));
        const last = forms[i][forms[i].length - 1];
        const mixed = (k) => `${ELL}${words.join(ELL)}${ELL}${last.slice(last.length - k)}`.replace(/…{2,}/g, ELL);
        let lo = 0;
        let hi = last.length;
        while (lo < hi) {
          const mid = Math.ceil((lo + hi) / 2);
          if (width(mixed(mid)) <= room) lo = mid; else hi = mid - 1;
        }
        const m = mixed(lo);
        const c = cut(s, room, width, must);
        out[i] = { text: lo >= 12 && shortens(m, names[i]) ? m : c, level: l };
      }
    }
    if (!clash) break;
  }
  return out.map((o) => o.text);
}

// shortens says whether short is name with parts of it replaced by '…'.
function shortens(short, name) {
  const parts = short.split(ELL);
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (!name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  for (const p of parts.slice(1, -1)) {
    const j = name.indexOf(p, at);
    if (j < 0) return false;
    at = j + p.length;
  }
  return parts.length === 1 ? short === name : at <= name.length - last.length;
}

/**
 * Labels for package keys (Go import paths, C++ namespaces, binaries):
 * each its last path element ("…/handler"), with more elements where two
 * would read alike.
 */
export function packageLabels(keys) {
  const parts = keys.map((k) => (k.includes('/') && !k.startsWith('/') ? k.split('/') : [k]));
  const label = (i, n) => (n >= parts[i].length ? keys[i] : `${ELL}/${parts[i].slice(-n).join('/')}`);
  const keep = keys.map(() => 1);
  for (let pass = 0; pass < 64; pass++) {
    const seen = new Map();
    let clash = false;
    keys.forEach((_, i) => {
      const l = label(i, keep[i]);
      const g = seen.get(l);
      if (g) g.push(i); else seen.set(l, [i]);
    });
    for (const g of seen.values()) {
      if (g.length < 2) continue;
      for (const i of g) if (keep[i] < parts[i].length) { keep[i]++; clash = true; }
    }
    if (!clash) break;
  }
  return keys.map((_, i) => label(i, keep[i]));
}

let measure = null; // a canvas context measuring text, made on first use

/**
 * Writes into each cell (td elements of one column, each in a row whose
 * data-name is the whole name) its name fitted to the column's width by
 * fitNames.
 */
export function fitNameCells(cells) {
  if (!cells.length) return;
  const cs = getComputedStyle(cells[0]);
  const room = cells[0].clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  if (!(room > 0)) return;
  if (!measure) measure = document.createElement('canvas').getContext('2d');
  measure.font = cs.font;
  const width = (t) => measure.measureText(t).width;
  const names = Array.from(cells, (td) => td.closest('tr').dataset.name);
  const texts = fitNames(names, room, width);
  cells.forEach((td, i) => { if (td.textContent !== texts[i]) td.textContent = texts[i]; });
}
