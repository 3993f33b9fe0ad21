"""Fixtures of the pure-Python tests (no MPI, no build). This folder is a package (tests/python/__init__.py)
so that this file does not shadow tests/conftest.py, which other test folders import as `conftest`."""
import pytest

from iotame.runner import LAUNCHERS

from .fakes import Direct, FakeProgram, make_stats

_OURS = ("IOTAME_CONFIG", "IOTAME_STATS", "IOTAME_LIB", "IOTAME_KERNEL", "IOTAME_PROFILE", "LD_PRELOAD")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Our variables from the caller's environment must not leak into the tests."""
    for name in _OURS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stats_obj():
    return make_stats()


@pytest.fixture
def fake_lib(tmp_path, monkeypatch):
    """An empty file as libiotame.so: the dynamic loader warns on stderr and ignores it."""
    lib = tmp_path / "libfake.so"
    lib.write_bytes(b"")
    monkeypatch.setenv("IOTAME_LIB", str(lib))
    return lib


@pytest.fixture
def fake_program(tmp_path):
    return FakeProgram(tmp_path / "prog")


@pytest.fixture
def fake_kernel(tmp_path, monkeypatch):
    """A FakeProgram as iotame-kernel."""
    k = FakeProgram(tmp_path / "kernel")
    monkeypatch.setenv("IOTAME_KERNEL", str(k.path))
    return k


@pytest.fixture
def direct_launcher(monkeypatch):
    """The `mpiexec` launcher runs the program directly, once."""
    monkeypatch.setitem(LAUNCHERS, "mpiexec", Direct)
    return Direct
