// The annotate view: search the listing (Enter and Shift+Enter step through
// the matches), and jump to a branch target within the function with a
// highlight that shows where it landed. The hottest instruction is scrolled
// into view on load unless the URL names an instruction.

const table = document.getElementById("annotate");
const search = /** @type {HTMLInputElement} */ (document.getElementById("annotate-search"));
const counter = document.getElementById("annotate-matches");
const rows = table ? Array.from(table.querySelectorAll("tbody tr.insn")) : [];
let matches = [];
let current = -1;

// The row jumped to stays marked until the next jump.
function flash(row) {
  for (const r of table.querySelectorAll("tr.jumped")) r.classList.remove("jumped");
  row.classList.add("jumped");
}

function goto(row) {
  row.scrollIntoView({ block: "center" });
  flash(row);
}

function show(i) {
  if (current >= 0 && matches[current]) matches[current].classList.remove("current");
  current = i;
  if (matches[i]) {
    matches[i].classList.add("current");
    matches[i].scrollIntoView({ block: "center" });
  }
  counter.textContent = matches.length ? `${i + 1} of ${matches.length}` : (search.value ? "no match" : "");
}

function find() {
  const q = search.value.trim().toLowerCase();
  for (const r of matches) r.classList.remove("match", "current");
  matches = [];
  current = -1;
  if (q) {
    // A row matches on its own text or on the source line heading it.
    let src = "";
    for (const r of table.querySelectorAll("tbody tr")) {
      if (r.classList.contains("src")) {
        src = r.textContent.toLowerCase();
        continue;
      }
      if (r.textContent.toLowerCase().includes(q) || src.includes(q)) {
        r.classList.add("match");
        matches.push(r);
      }
    }
  }
  show(matches.length ? 0 : -1);
}

if (search) {
  search.addEventListener("input", find);
  search.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !matches.length) return;
    e.preventDefault();
    const n = matches.length;
    show(((current + (e.shiftKey ? -1 : 1)) % n + n) % n);
  });
}

if (table) {
  table.addEventListener("click", (e) => {
    const a = /** @type {Element} */ (e.target).closest("a.target, a.skid");
    if (!a) return;
    const row = document.getElementById(a.getAttribute("href").slice(1));
    if (!row) return;
    e.preventDefault();
    history.replaceState(null, "", "#" + row.id);
    goto(row);
  });
  const named = location.hash && document.getElementById(location.hash.slice(1));
  const hot = rows.find((r) => r.classList.contains("hot"));
  if (named) goto(named);
  else if (hot) hot.scrollIntoView({ block: "center" });
}

// Jump arrows: one per branch to an instruction of this function, drawn in
// the arrows column from the branch to its target (backward jumps, loops,
// in a second colour), nested so that they do not overlap.
const SVG = "http://www.w3.org/2000/svg";
function drawArrows() {
  if (!table) return;
  const wrap = table.parentElement;
  wrap.querySelector("svg.jump-arrows")?.remove();
  const col = /** @type {HTMLElement} */ (table.querySelector("tbody td.arrows"));
  if (!col) return;
  const jumps = [];
  for (const r of rows) {
    const a = r.querySelector("a.target");
    const to = a && document.getElementById(a.getAttribute("href").slice(1));
    if (to) jumps.push({ from: r, to, lo: Math.min(rows.indexOf(r), rows.indexOf(to)), hi: Math.max(rows.indexOf(r), rows.indexOf(to)) });
  }
  if (!jumps.length) return;
  // Shorter spans nearer the code; each takes the first free lane.
  jumps.sort((x, y) => (x.hi - x.lo) - (y.hi - y.lo));
  const lanes = [];
  for (const j of jumps) {
    let lane = 0;
    while ((lanes[lane] || []).some((o) => o.lo <= j.hi && j.lo <= o.hi)) lane++;
    (lanes[lane] ||= []).push(j);
    j.lane = lane;
  }
  const width = col.offsetWidth;
  const step = Math.max(3, Math.min(8, (width - 8) / lanes.length));
  const svg = document.createElementNS(SVG, "svg");
  svg.classList.add("jump-arrows");
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(table.offsetHeight));
  svg.style.left = col.offsetLeft + "px";
  svg.innerHTML = '<defs><marker id="jump-head" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L6,3 L0,6 z"/></marker></defs>';
  for (const j of jumps) {
    const y = (r) => r.offsetTop + r.offsetHeight / 2;
    const x = width - 2 - (j.lane + 1) * step;
    const p = document.createElementNS(SVG, "path");
    p.setAttribute("d", `M${width - 1},${y(j.from)} H${x} V${y(j.to)} H${width - 1}`);
    p.setAttribute("marker-end", "url(#jump-head)");
    if (j.from.offsetTop > j.to.offsetTop) p.classList.add("back");
    svg.appendChild(p);
  }
  wrap.appendChild(svg);
}
drawArrows();
addEventListener("resize", drawArrows);
