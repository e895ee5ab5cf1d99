// flame.js draws the flamegraph on a canvas. (filled in by the frontend work)
