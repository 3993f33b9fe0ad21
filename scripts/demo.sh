#!/usr/bin/env bash
# make demo: `iotame tune` on a built-in kernel on the local file system for a minute or two, then the default
# against the tuned result. The kernel is ROMIO's noncontig pattern (2 ranks, collective, 64-byte elements),
# whose MPI-IO hints alone move bandwidth by several times.
# The tuning directory (best.json, summary.json, report) stays in build/demo-tune.
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${DEMO_TRIALS:-20}
out=build/demo-tune
data=$(mktemp -d "${TMPDIR:-/tmp}/iotame-demo.XXXXXX")
trap 'rm -rf "$data"' EXIT
rm -rf "$out"                     # a fresh study each time (the knowledge base remembers the last one)
job=(build/kernels/iotame-kernel noncontig --elmtcount 16 --veclen 65536 --collective --file "$data/noncontig.dat")
echo "iotame demo: iotame tune --trials $TRIALS -- mpiexec -n 2 ${job[*]}"
echo "  (the first trial is the system default; at the end the best few and their reductions race beside it)"
.venv/bin/iotame tune --trials "$TRIALS" --study demo --out "$out" --dir "$data" -- mpiexec -n 2 "${job[@]}"
.venv/bin/iotame report "$out" >/dev/null
echo "iotame demo: run with it: .venv/bin/iotame run --config $out/best.json -- mpiexec -n 2 ${job[*]}"
echo "iotame demo: plots in $out/index.html"
