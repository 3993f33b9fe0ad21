"""`cmake --install build --prefix P` (the build of make setup): the runtime, the kernel, the validator, the public
header and settings.json land under P, and a program outside the checkout finds them through the installed
pkg-config file and CMake package config, and links the installed runtime."""
import json
import os
import shutil
import sys
import subprocess
from pathlib import Path

import pytest

from .venvs import venv_with_checkout_deps

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"

PROGRAM = r"""
#include <stdio.h>
#include <iotame.h>
int main(void) { printf("%s %d\n", iotame_version(), IOTAME_CONFIG_VERSION); return 0; }
"""


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if shutil.which("cmake") is None or not (BUILD / "CMakeCache.txt").exists():
        pytest.fail("needs the build of make setup (build/) and cmake")
    p = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(p)], check=True, capture_output=True)
    return p


def test_the_install_holds_every_part(prefix):
    libdir = next(prefix.glob("lib*/libiotame.so")).parent
    for f in ("bin/iotame-kernel", "bin/iotame-config", "include/iotame.h"):
        assert (prefix / f).is_file(), f
    assert (libdir / "libiotame-start.so").is_file()     # beside libiotame.so, where calibrate --config looks
    assert json.loads((prefix / "share/iotame/settings.json").read_text()) == \
        json.loads((ROOT / "runtime/settings.json").read_text())
    assert (libdir / "pkgconfig/iotame.pc").is_file() and (libdir / "cmake/iotame/iotameConfig.cmake").is_file()
    # the installed validator, against the installed settings: a bad configuration is refused, naming the key
    bad = prefix / "bad.json"
    bad.write_text(json.dumps({"version": 1, "defaults": {"collective": {"strategy": "fastest"}}}))
    p = subprocess.run([str(prefix / "bin/iotame-config"), "check", "--settings",
                        str(prefix / "share/iotame/settings.json"), str(bad)], capture_output=True, text=True)
    assert p.returncode == 1 and "collective.strategy" in p.stderr, p.stderr


def test_pkg_config_finds_the_moved_install(prefix, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(prefix, moved)  # relocatable: the files find their prefix from where they are
    pc = next(moved.glob("lib*/pkgconfig"))
    env = dict(os.environ, PKG_CONFIG_PATH=str(pc))
    out = subprocess.run(["pkg-config", "--cflags", "--libs", "iotame"], env=env, capture_output=True, text=True,
                         check=True).stdout
    datadir = subprocess.run(["pkg-config", "--variable=datadir", "iotame"], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
    assert Path(datadir, "settings.json").resolve() == (moved / "share/iotame/settings.json").resolve()
    src = tmp_path / "v.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "v"
    subprocess.run(["mpicc", str(src), "-o", str(exe), *out.split()], check=True, capture_output=True)
    libdir = next(moved.glob("lib*/libiotame.so")).parent
    run = subprocess.run([str(exe)], env=dict(os.environ, LD_LIBRARY_PATH=str(libdir)), capture_output=True,
                         text=True, check=True)
    assert run.stdout.split() == [(ROOT / "python/iotame/__init__.py").read_text().split('__version__ = "')[1]
                                  .split('"')[0], "1"]


def test_find_package_gives_the_imported_target(prefix, tmp_path):
    (tmp_path / "v.c").write_text(PROGRAM)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(user C)\nfind_package(iotame 0.1 REQUIRED)\n"
        "add_executable(v v.c)\ntarget_link_libraries(v PRIVATE iotame::iotame)\n"
        'file(WRITE ${CMAKE_BINARY_DIR}/where.txt "${IOTAME_SETTINGS}\\n${IOTAME_KERNEL}\\n${IOTAME_MPI}\\n")\n')
    b = tmp_path / "b"
    subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(b), f"-DCMAKE_PREFIX_PATH={prefix}",
                    "-DCMAKE_C_COMPILER=mpicc"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(b)], check=True, capture_output=True)
    settings, kernel, mpi = (b / "where.txt").read_text().split("\n")[:3]
    assert Path(settings).is_file() and Path(kernel).is_file() and mpi == "mpich"
    run = subprocess.run([str(b / "v")], capture_output=True, text=True, check=True)  # rpath from the target
    assert run.stdout.split()[1] == "1"


SPACE = """
[mpiio]
romio_cb_write = ["enable", "disable"]
cb_buffer_size = [1048576, 4194304]
"""


def test_pip_install_outside_the_checkout_uses_the_installed_runtime(prefix, tmp_path):
    """The package copied out of the checkout and pip-installed (with IOTAME_PREFIX at build time) into a fresh
    virtual environment: `iotame info` names the install, `iotame run` and `iotame tune` use its runtime."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    # the dependencies are the checkout environment's; the package itself is built fresh
    pip = [str(venv_with_checkout_deps(venv)), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]
    p = subprocess.run([*pip, str(src)], env=dict(os.environ, IOTAME_PREFIX=str(prefix)), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    iotame = str(venv / "bin/iotame")
    work = tmp_path / "work"
    work.mkdir()

    info = json.loads(subprocess.run([iotame, "info", "--json"], env=env, cwd=work, capture_output=True,
                                     text=True, check=True).stdout)
    assert info["checkout"] is None and info["runtime"] == {"source": "built-in prefix", "prefix": str(prefix)}
    assert info["libiotame"]["exists"] and Path(info["libiotame"]["path"]).parent.parent == prefix
    assert info["settings"]["path"] == str(prefix / "share/iotame/settings.json")

    kernel = str(prefix / "bin/iotame-kernel")
    ior = [kernel, "ior", "-c", "-w", "-r", "-b", "256k", "-t", "64k", "-o", str(work / "ior.dat")]
    (work / "c.json").write_text(json.dumps({"version": 1, "defaults": {"mpiio_hints": {"cb_buffer_size": 1048576}}}))
    subprocess.run([iotame, "run", "--config", "c.json", "--stats", "s.json", "--", "mpiexec", "-n", "2", *ior],
                   env=env, cwd=work, check=True, capture_output=True, timeout=120)
    stats = json.loads((work / "s.json").read_text())
    assert stats["nprocs"] == 2 and stats["config"] == str(work / "c.json")      # the installed runtime ran

    (work / "space.toml").write_text(SPACE)
    p = subprocess.run([iotame, "tune", "--max-noise", "1000", "--trials", "3", "--space", "space.toml",
                        "--no-drop-caches", "--out", "t",
                        "--final-repeat", "1", "--ablation-rounds", "0", "--", "mpiexec", "-n", "1", *ior],
                       env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((work / "t/summary.json").read_text())
    assert summary["trials"]["total"] == 3 and summary["trials"]["complete"] == 3 and (work / "t/best.json").is_file()


def configure(tmp_path, *options):
    return subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b"), *options], capture_output=True,
                          text=True, timeout=300)


def test_hdf5_is_found_by_find_package_and_by_pkg_config(tmp_path):
    p = configure(tmp_path)
    assert p.returncode == 0 and "parallel HDF5 from find_package(HDF5)" in p.stdout, p.stdout + p.stderr
    shutil.rmtree(tmp_path / "b")
    p = configure(tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_HDF5=ON")      # no FindHDF5: Debian's pkg-config names
    assert p.returncode == 0 and "parallel HDF5 from pkg-config hdf5-mpich" in p.stdout, p.stdout + p.stderr


@pytest.mark.skipif(not Path("/usr/bin/mpicc.openmpi").exists() or Path("/usr/bin/h5pcc.openmpi").exists(),
                    reason="needs Open MPI without an Open MPI HDF5")
def test_the_hdf5_of_another_mpi_is_refused(tmp_path):
    p = configure(tmp_path, "-DMPI_C_COMPILER=/usr/bin/mpicc.openmpi")
    assert p.returncode != 0
    assert "built for another MPI: not used" in p.stdout and "no parallel HDF5 for openmpi" in p.stderr
