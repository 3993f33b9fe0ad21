#!/usr/bin/env bash
# A second build of the runtime, iotame-kernel and the test programs against Open MPI, in build-openmpi/ (the
# default build/ is MPICH's). Without HDF5: Debian's parallel HDF5 for Open MPI is not installed. Exit status 3
# when Open MPI is not installed. Safe to run again (only what changed is rebuilt).
# Usage: scripts/build_openmpi.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-openmpi}
cc=${OMPI_MPICC:-/usr/bin/mpicc.openmpi}
if [ ! -x "$cc" ]; then
  echo "build_openmpi: $cc not found (Debian: apt-get install openmpi-bin libopenmpi-dev)" >&2
  exit 3
fi
mkdir -p "$dir"
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPI_C_COMPILER="$cc" -DIOTAME_HDF5=OFF \
    >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; echo "build_openmpi: configure failed" >&2; exit 1; }
fi
if ! cmake --build "$dir" -j2 >"$dir/build.log" 2>&1; then
  cat "$dir/build.log"; echo "build_openmpi: build failed" >&2; exit 1
fi
grep -E 'warning:' "$dir/build.log" || true
grep -q 'iotame: MPI implementation openmpi' "$dir/configure.log" ||
  { echo "build_openmpi: $dir is not configured for Open MPI (see $dir/configure.log)" >&2; exit 1; }
test -f "$dir/runtime/libiotame.so" && test -x "$dir/kernels/iotame-kernel" && test -x "$dir/tests/random_collective"
