#!/usr/bin/env bash
# make demo: the IOR kernel (2 ranks, MPI-IO, collective, verified) under the runtime, then its statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/iotame-demo.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "iotame demo: iotame run --config examples/demo.json -- mpiexec -n 2 iotame-kernel ior ... (in $dir)"
.venv/bin/iotame run --config examples/demo.json --stats "$dir/stats.json" -- \
  mpiexec -n 2 build/kernels/iotame-kernel ior -a MPIIO -c -w -r -W -R -e -b 16m -t 1m -s 2 -o "$dir/iotame-demo.dat"
