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
. scripts/build_variant.sh
build_variant build_openmpi "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPI_C_COMPILER="$cc" -DIOTAME_HDF5=OFF
grep -q 'iotame: MPI implementation openmpi' "$dir/configure.log" ||
  { echo "build_openmpi: $dir is not configured for Open MPI (see $dir/configure.log)" >&2; exit 1; }
test -f "$dir/runtime/libiotame.so" && test -x "$dir/kernels/iotame-kernel" && test -x "$dir/tests/random_collective"
