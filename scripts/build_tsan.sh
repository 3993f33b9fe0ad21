#!/usr/bin/env bash
# A ThreadSanitizer build of the runtime and the test programs against the default MPI (MPICH), in build-tsan/
# (-DIOTAME_TSAN=ON: -fsanitize=thread -g -O1; no kernels, no benchmarks, no HDF5). The tsan test layer
# (tests/tsan) builds it before it runs. Safe to run again (only what changed is rebuilt).
# Usage: scripts/build_tsan.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-tsan}
libtsan=$(gcc -print-file-name=libtsan.so)
if [ ! -e "$libtsan" ]; then
  echo "build_tsan: gcc has no libtsan.so (Debian: apt-get install libtsan2 or the gcc package that ships it)" >&2
  exit 3
fi
. scripts/build_variant.sh
build_variant build_tsan "$dir" -DCMAKE_BUILD_TYPE= -DIOTAME_TSAN=ON -DIOTAME_HDF5=OFF
grep -q '^IOTAME_TSAN:BOOL=ON$' "$dir/CMakeCache.txt" ||
  { echo "build_tsan: $dir is not configured with IOTAME_TSAN=ON" >&2; exit 1; }
test -f "$dir/runtime/libiotame.so" && test -x "$dir/tests/test_throttle" && test -x "$dir/tests/stage_threads"
