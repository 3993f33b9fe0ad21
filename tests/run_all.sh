#!/usr/bin/env bash
# make test: every layer (C unit tests, MPI jobs, end-to-end jobs under LD_PRELOAD, the same under Open MPI, the
# threaded parts under ThreadSanitizer, Python), then one summary line. Exit status 0 only when every layer passed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
start=$(date +%s)
summary=()
failed=0

layer() { # name, command...
  local name=$1; shift
  echo "== $name: $*"
  local log; log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local counts
  if [ "$name" = unit ]; then
    counts=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | awk '{print $6-$1" passed, "$1" failed"}')
  else
    counts=$(tail -n 1 "$log" | sed -E 's/^=+ //; s/ in [0-9.]+s.*$//')
  fi
  rm -f "$log"
  [ "$rc" -eq 0 ] || failed=1
  summary+=("$name: ${counts:-no result} $([ "$rc" -eq 0 ] && echo ok || echo FAILED)")
}

layer unit ctest --test-dir build -R '^unit\.' --output-on-failure
layer mpi "$PY" -m pytest -q -p no:cacheprovider tests/mpi
layer preload "$PY" -m pytest -q -p no:cacheprovider tests/preload
layer openmpi "$PY" -m pytest -q -p no:cacheprovider tests/openmpi   # builds build-openmpi/ first
layer tsan "$PY" -m pytest -q -p no:cacheprovider tests/tsan         # builds build-tsan/ first
layer python "$PY" -m pytest -q -p no:cacheprovider tests/python
layer slurm "$PY" -m pytest -q -p no:cacheprovider tests/slurm      # root: a one-node Slurm (scripts/slurm)
layer testbed "$PY" -m pytest -q -p no:cacheprovider tests/testbed    # root: hosts as namespaces (scripts/testbed)

elapsed=$(( $(date +%s) - start ))
line=$(IFS='|'; echo "${summary[*]}" | sed 's/|/ | /g')
if [ "$failed" -eq 0 ]; then
  echo "iotame tests PASSED in ${elapsed}s: $line"
else
  echo "iotame tests FAILED in ${elapsed}s: $line"
fi
exit "$failed"
