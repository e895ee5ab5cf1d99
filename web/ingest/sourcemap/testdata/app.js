// A small program for the source map tests: three functions that burn
// CPU, so that a node --cpu-prof recording of its minified bundle names
// them by their minified names and positions.
function fibonacciRecursive(n) {
  if (n < 2) {
    return n;
  }
  return fibonacciRecursive(n - 1) + fibonacciRecursive(n - 2);
}

function sumOfSquares(limit) {
  let total = 0;
  for (let i = 0; i < limit; i++) {
    total += i * i;
  }
  return total;
}

function mainLoop(rounds) {
  let checksum = 0;
  for (let r = 0; r < rounds; r++) {
    checksum += fibonacciRecursive(22);
    checksum += sumOfSquares(200000);
  }
  return checksum;
}

console.log(mainLoop(60));
