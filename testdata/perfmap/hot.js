// A small hot JS program for testdata/perfmap/record.sh: a recursive
// function and a loop that V8 compiles, run for about half a second.
function rec(n) { return n < 2 ? n : rec(n - 1) + rec(n - 2); }
function loop(k) {
  let s = 0;
  for (let i = 0; i < k; i++) s += (i * 31) % 7;
  return s;
}
const end = Date.now() + Number(process.argv[2] || 500);
let t = 0;
while (Date.now() < end) t += rec(20) + loop(20000);
console.log(t > 0 ? "ok" : "no");
