#!/usr/bin/env bash
# make setup: install what is missing, create .venv, build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: MPICH, parallel HDF5 for MPICH, jansson, build tools, fio.
PKGS=(mpich libmpich-dev libhdf5-mpich-dev hdf5-tools libjansson-dev cmake make gcc gfortran
      pkg-config fio python3 python3-venv)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python virtual environment with the CLI (editable, so it finds build/ by itself).
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.iotame-installed
want=$(sha256sum python/pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing the iotame Python package into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e 'python[test]'
  echo "$want" >"$stamp"
fi

# C parts: libiotame.so and iotame-kernel (and the test programs).
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
if ! cmake --build build -j2 >build/build.log 2>&1; then
  cat build/build.log; echo "setup: build failed" >&2; exit 1
fi
grep -E 'warning:' build/build.log || true
test -f build/runtime/libiotame.so && test -x build/kernels/iotame-kernel
echo "setup: ok"
