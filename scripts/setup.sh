#!/usr/bin/env bash
# make setup: install what is missing, create .venv, build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: MPICH, parallel HDF5 for MPICH, jansson, build tools, fio; Open MPI for the second build that
# tests/openmpi checks (scripts/build_openmpi.sh; no HDF5 for it); for the multi-host testbed (scripts/testbed,
# docs/testbed.md) ip and tc (iproute2), unshare and nsenter (util-linux), sysctl (procps); PostgreSQL's server
# for a shared tuning study (scripts/postgres); Slurm for tests/slurm (scripts/slurm, docs/slurm.md): slurm-wlm
# (slurmctld, slurmd), slurm-client, munge; Lmod to load packaging/modules/iotame.lua in tests/python; libtsan2 for
# the ThreadSanitizer build of tests/tsan (scripts/build_tsan.sh; gcc's own dependency on amd64, named here);
# CephFS for scripts/ceph (docs/design/cephfs.md): its daemons, the FUSE client, the ceph CLI, and attr for
# getfattr/setfattr of the ceph.file.layout attributes; Chromium's headless shell, in which tests/python renders
# the pages iotame writes (advise --html).
PKGS=(mpich libmpich-dev libhdf5-mpich-dev hdf5-tools libjansson-dev cmake make gcc gfortran
      pkg-config fio python3 python3-venv iproute2 util-linux procps postgresql
      slurm-wlm slurm-client munge lmod libtsan2
      ceph-mon ceph-mgr ceph-mds ceph-osd ceph-fuse ceph-common attr chromium-headless-shell)
OPENMPI_PKGS=(openmpi-bin libopenmpi-dev)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
for p in "${PKGS[@]}" "${OPENMPI_PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# MPICH stays the default MPI. Installing Open MPI makes Debian's alternatives (auto mode, Open MPI has the higher
# priority) point mpicc, mpif90, mpirun, mpiexec, and /usr/include/<triplet>/mpi, libmpi.so, mpi.pc at Open MPI,
# which would build build/ against Open MPI and run every test with its mpiexec. Each of those alternatives that
# has an MPICH choice is set to it, in manual mode (a later install does not switch it back); nothing is done when
# it is already so, or when the alternative does not exist.
for name in $(update-alternatives --get-selections 2>/dev/null |
              awk '$1 == "mpi" || $1 == "mpirun" || $1 ~ /^mpi-.*-linux-gnu$/ {print $1}'); do
  # the whole list first: grep -m1 in a pipe can close it early, and pipefail then takes the SIGPIPE as a failure
  choices=$(update-alternatives --list "$name" 2>/dev/null) || continue
  choice=$(grep -m1 mpich <<<"$choices") || continue
  query=$(update-alternatives --query "$name")
  if ! grep -qx "Status: manual" <<<"$query" || ! grep -qx "Value: $choice" <<<"$query"; then
    echo "setup: alternative $name -> $choice (MPICH stays the default)"
    $SUDO update-alternatives --set "$name" "$choice" >/dev/null
  fi
done

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

# Drishti (LBNL's Darshan log analyser, PyPI drishti-io) in a venv of its own: it pins its own dependencies, which
# must not move .venv's. tests/python/test_advise_drishti.py runs it beside `iotame advise` (docs/advise.md).
DRISHTI_VERSION=0.8
if [ ! -x .venv-drishti/bin/drishti ] || [ "$(cat .venv-drishti/.version 2>/dev/null)" != "$DRISHTI_VERSION" ]; then
  echo "setup: installing drishti-io $DRISHTI_VERSION into .venv-drishti"
  "$PY" -m venv .venv-drishti
  .venv-drishti/bin/pip install -q "drishti-io==$DRISHTI_VERSION"
  echo "$DRISHTI_VERSION" >.venv-drishti/.version
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
