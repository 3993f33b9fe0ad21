#!/usr/bin/env bash
# make test: every layer (C unit tests, MPI jobs, end-to-end jobs under LD_PRELOAD, the same under Open MPI, the
# threaded parts under ThreadSanitizer, Python, Slurm, the multi-host testbed), then the ten slowest tests and one
# summary line with each layer's counts, status and seconds. Exit status 0 only when every layer passed.
#
# The long matrices run a sample drawn with IOTAME_SAMPLE_SEED (default: today's date, set here once for every layer
# and printed; tests/conftest.py sample); with IOTAME_FULL_MATRIX=1 (make test-all) every case runs. Layers whose
# tests wait more than they compute run on several pytest-xdist workers (python: IOTAME_TEST_WORKERS, default 3,
# whole files to a worker; openmpi: 2, whose ranks yield the cores when oversubscribed); the MPICH layers stay
# serial, since MPICH's ranks busy-poll and two jobs at once on 2 cores only take turns. Each layer writes a JUnit file to build/test-results/ (ctest's and pytest's own).
# Usage: tests/run_all.sh [LAYER...]   (default: every layer, in the order below)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export IOTAME_SAMPLE_SEED=${IOTAME_SAMPLE_SEED:-$(date +%F)}
WORKERS=${IOTAME_TEST_WORKERS:-3}
RESULTS=$PWD/build/test-results
mkdir -p "$RESULTS"
start=$(date +%s)
summary=()
junits=()
failed=0
only=" $* "

if [ "${IOTAME_FULL_MATRIX:-}" = 1 ]; then
  echo "== every case of every matrix (IOTAME_FULL_MATRIX=1)"
else
  echo "== long matrices sampled with IOTAME_SAMPLE_SEED=$IOTAME_SAMPLE_SEED (make test-all runs every case)"
fi

layer() { # name, command...
  local name=$1; shift
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  echo "== $name: $*"
  local log t0 rc counts seconds
  log=$(mktemp)
  rm -f "$RESULTS/$name.xml"
  t0=$(date +%s)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  seconds=$(( $(date +%s) - t0 ))
  if [ "$name" = unit ]; then
    counts=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | awk '{print $6-$1" passed, "$1" failed"}')
  else
    counts=$(tail -n 1 "$log" | sed -E 's/^=+ //; s/ in [0-9.]+s.*$//')
  fi
  rm -f "$log"
  [ "$rc" -eq 0 ] || failed=1
  junits+=("$name=$RESULTS/$name.xml")
  summary+=("$name: ${counts:-no result} $([ "$rc" -eq 0 ] && echo ok || echo FAILED) ${seconds}s")
}

pytest_layer() { # name, pytest arguments...
  local name=$1; shift
  layer "$name" "$PY" -m pytest -q -p no:cacheprovider --junitxml="$RESULTS/$name.xml" "$@"
}

layer unit ctest --test-dir build -R '^unit\.' -j2 --output-on-failure --output-junit "$RESULTS/unit.xml"
pytest_layer mpi tests/mpi
pytest_layer preload tests/preload
pytest_layer openmpi -n 2 tests/openmpi   # builds build-openmpi/ first (one worker builds, the other waits)
pytest_layer tsan tests/tsan         # builds build-tsan/ first
pytest_layer python -n "$WORKERS" --dist loadfile tests/python
pytest_layer slurm tests/slurm       # root: a one-node Slurm (scripts/slurm)
pytest_layer testbed tests/testbed   # root: hosts as namespaces (scripts/testbed)

elapsed=$(( $(date +%s) - start ))
[ ${#junits[@]} -eq 0 ] || "$PY" tests/slowest.py 10 "${junits[@]}"
line=$(IFS='|'; echo "${summary[*]}" | sed 's/|/ | /g')
if [ "$failed" -eq 0 ]; then
  echo "iotame tests PASSED in ${elapsed}s: $line"
else
  echo "iotame tests FAILED in ${elapsed}s: $line"
fi
exit "$failed"
