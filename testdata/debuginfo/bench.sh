#!/bin/bash
# Serving and uploading a 64 MiB debug file: viewer vs Debian's elfutils
# debuginfod, in one run, side by side with the same curl (issue 19).
#
#   testdata/debuginfo/bench.sh [ROUNDS]      # from the repository root
#
# Both servers run in a private network namespace (debuginfod 0.188 binds
# every interface), on its loopback, with curl beside them. The file is
# testdata/debuginfo/prog.debug padded with a 64 MiB non-allocated section
# (its build ID unchanged); debuginfod indexes it with -F, viewer gets it by
# viewer upload-debuginfo. Prints the median download time and throughput of
# each, their ratio, viewer's peak RSS (VmHWM) after the downloads, and the
# median time of a 64 MiB PUT /buildid/ID/debuginfo vs a plain curl -T of the
# same bytes to /api/profiles (spooled and hashed as a profile upload is,
# then refused as no profile format: a lower bound of a profile upload).
set -euo pipefail
rounds=${1:-21}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/viewer" "$root/cmd/viewer"
mkdir -p "$tmp/srv" "$tmp/data"
head -c $((64 << 20)) /dev/urandom >"$tmp/pad"
objcopy --add-section .debug_pad="$tmp/pad" --set-section-flags .debug_pad=readonly,contents \
  "$root/testdata/debuginfo/prog.debug" "$tmp/srv/big.debug"
bid=$(eu-readelf -n "$tmp/srv/big.debug" | awk '/Build ID:/ {print $3}')
export tmp bid rounds
unshare --net --pid --fork --kill-child --mount-proc bash -s <<'INNER'
set -euo pipefail
ip link set lo up
debuginfod -F -p 18002 -d "$tmp/db.sqlite" -t0 -g0 "$tmp/srv" >"$tmp/debuginfod.log" 2>&1 &
dpid=$!
DEBUGINFOD_URLS= "$tmp/viewer" serve --addr 127.0.0.1:18001 --data "$tmp/data" --max-upload 1GiB >"$tmp/viewer.log" 2>&1 &
vpid=$!
V=http://127.0.0.1:18001 D=http://127.0.0.1:18002
for i in $(seq 200); do
  curl -sf -o /dev/null "$D/buildid/$bid/debuginfo" && curl -sf -o /dev/null "$V/healthz" && break
  sleep 0.1
done
"$tmp/viewer" upload-debuginfo "$tmp/srv/big.debug" --server "$V" >/dev/null
cmp <(curl -s "$V/buildid/$bid/debuginfo") "$tmp/srv/big.debug"
cmp <(curl -s "$D/buildid/$bid/debuginfo") "$tmp/srv/big.debug"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fastest() { sort -g | head -1; }
vt=() dt=()
for r in $(seq "$rounds"); do
  vt+=("$(curl -s -o /dev/null -w '%{time_total}' "$V/buildid/$bid/debuginfo")")
  dt+=("$(curl -s -o /dev/null -w '%{time_total}' "$D/buildid/$bid/debuginfo")")
done
vm=$(printf '%s\n' "${vt[@]}" | median) dm=$(printf '%s\n' "${dt[@]}" | median)
vf=$(printf '%s\n' "${vt[@]}" | fastest) df=$(printf '%s\n' "${dt[@]}" | fastest)
size=$(stat -c %s "$tmp/srv/big.debug")
hwm=$(awk '/VmHWM/ {print $2}' /proc/$vpid/status)
echo "file: $size bytes, build ID $bid, $rounds rounds"
awk -v v="$vm" -v d="$dm" -v vf="$vf" -v df="$df" -v s="$size" 'BEGIN {
  printf "serve  debuginfod  median %.3f s %5.0f MiB/s, fastest %.3f s %5.0f MiB/s\n", d, s/d/1048576, df, s/df/1048576
  printf "serve  viewer      median %.3f s %5.0f MiB/s, fastest %.3f s %5.0f MiB/s\n", v, s/v/1048576, vf, s/vf/1048576
  printf "viewer / debuginfod throughput: median %.2f, fastest %.2f\n", d/v, df/vf }'
echo "viewer VmHWM after the downloads: $((hwm / 1024)) MiB"
ut=() pt=()
for r in $(seq $(((rounds + 1) / 2))); do
  ut+=("$(curl -s -o /dev/null -w '%{time_total}' -T "$tmp/srv/big.debug" "$V/buildid/$bid/debuginfo")")
done
hwm=$(awk '/VmHWM/ {print $2}' /proc/$vpid/status)
for r in $(seq $(((rounds + 1) / 2))); do
  pt+=("$(curl -s -o /dev/null -w '%{time_total}' -T "$tmp/srv/big.debug" -X POST "$V/api/profiles")")
done
um=$(printf '%s\n' "${ut[@]}" | median) pm=$(printf '%s\n' "${pt[@]}" | median)
awk -v u="$um" -v p="$pm" 'BEGIN {
  printf "upload PUT /buildid/ID/debuginfo  %.3f s\n", u
  printf "upload curl -T /api/profiles      %.3f s\n", p
  printf "debug upload / profile upload time: %.2f\n", u/p }'
echo "viewer VmHWM after the debug file uploads: $((hwm / 1024)) MiB"
kill $vpid $dpid
INNER
