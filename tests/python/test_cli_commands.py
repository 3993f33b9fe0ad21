"""The command line as a whole: exit codes, `python -m iotame`, `iotame info`, locating the built parts."""
import importlib
import json
import subprocess
import sys

import pytest


import iotame
from iotame.cli import main
from iotame.errors import MissingFileError
from iotame.paths import kernel_path, lib_path, repo_root, require_kernel, require_lib, settings_path


def test_exit_codes(capsys):
    assert main([]) == 2
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"iotame {iotame.__version__}"
    assert main(["--help"]) == 0
    assert main(["nope"]) == 2
    assert main(["config"]) == 2
    assert main(["stats", "show"]) == 2


def test_python_dash_m(tmp_path):
    p = subprocess.run([sys.executable, "-m", "iotame", "config", "check", str(tmp_path / "x.json")],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.startswith(f"iotame: config {tmp_path / 'x.json'}: cannot read")


def test_paths_default_to_the_build_tree():
    root = repo_root()
    assert (root / "runtime" / "settings.json") == settings_path() and settings_path().is_file()
    assert lib_path() == root / "build" / "runtime" / "libiotame.so"
    assert kernel_path() == root / "build" / "kernels" / "iotame-kernel"


def test_paths_environment_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("IOTAME_LIB", str(tmp_path / "lib.so"))
    monkeypatch.setenv("IOTAME_KERNEL", str(tmp_path / "k"))
    assert lib_path() == tmp_path / "lib.so" and kernel_path() == tmp_path / "k"
    with pytest.raises(MissingFileError, match=r"libiotame.so not found at .*lib.so \(run make setup"):
        require_lib()
    with pytest.raises(MissingFileError, match=r"iotame-kernel not found .*run make setup"):
        require_kernel()
    (tmp_path / "k").write_text("")
    assert require_kernel() == tmp_path / "k"


def fake_prefix(p):
    """An install prefix as cmake --install lays it out (empty files: locate() only looks)."""
    for f in ("lib/x86_64-linux-gnu/libiotame.so", "bin/iotame-kernel", "bin/iotame-config",
              "share/iotame/settings.json"):
        (p / f).parent.mkdir(parents=True, exist_ok=True)
        (p / f).write_text("")
    (p / "lib/x86_64-linux-gnu/pkgconfig").mkdir()
    (p / "lib/x86_64-linux-gnu/pkgconfig/iotame.pc").write_text(
        f"prefix={p}\nName: iotame\nDescription: d\nVersion: 0.1.0\n")
    return p


def test_locate_order_outside_a_checkout(tmp_path, monkeypatch):
    """Outside a checkout: IOTAME_PREFIX, then the prefix built in, the Python environment's, pkg-config's."""
    import iotame.paths as paths
    for v in ("IOTAME_LIB", "IOTAME_KERNEL", "IOTAME_PREFIX", "PKG_CONFIG_PATH"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(paths, "checkout_root", lambda: None)
    monkeypatch.setattr(paths, "repo_root", lambda: tmp_path / "site-packages")
    monkeypatch.setattr(paths.sys, "prefix", str(tmp_path / "nothing"))
    monkeypatch.setattr(paths, "_built_prefix", lambda: None)
    assert paths.locate().source == "not found"
    with pytest.raises(MissingFileError, match="set IOTAME_LIB"):
        require_lib()
    pc = fake_prefix(tmp_path / "pc")
    monkeypatch.setenv("PKG_CONFIG_PATH", str(pc / "lib/x86_64-linux-gnu/pkgconfig"))
    found = paths.locate()
    assert (found.source, found.prefix) == ("pkg-config", pc)
    assert found.lib == pc / "lib/x86_64-linux-gnu/libiotame.so" and found.kernel == pc / "bin/iotame-kernel"
    assert found.settings == pc / "share/iotame/settings.json"
    venv = fake_prefix(tmp_path / "venv")
    monkeypatch.setattr(paths.sys, "prefix", str(venv))
    assert (paths.locate().source, paths.locate().prefix) == ("python prefix", venv)
    built = fake_prefix(tmp_path / "built")
    monkeypatch.setattr(paths, "_built_prefix", lambda: str(built))
    assert (paths.locate().source, paths.locate().prefix) == ("built-in prefix", built)
    monkeypatch.setenv("IOTAME_PREFIX", str(tmp_path / "empty"))      # explicit, even when wrong: the error names it
    assert paths.locate().source == "IOTAME_PREFIX"
    with pytest.raises(MissingFileError, match=f"libiotame.so not found at {tmp_path / 'empty'}"):
        require_lib()
    monkeypatch.setenv("IOTAME_KERNEL", str(tmp_path / "k"))           # one part given: that part only
    assert kernel_path() == tmp_path / "k" and settings_path() == tmp_path / "empty/share/iotame/settings.json"


def test_info_json(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("IOTAME_KERNEL", str(tmp_path / "k"))
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kernel"] == {"path": str(tmp_path / "k"), "exists": False, "from": "IOTAME_KERNEL"}
    assert info["libiotame"]["from"] == info["runtime"]["source"] == "checkout"
    assert info["libiotame"]["path"] == str(lib_path())
    assert info["iotame_version"] == iotame.__version__
    assert info["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert set(info["mpi"]) >= {"implementation", "version", "mpiexec"}
    assert "version" in info["hdf5"]


def test_info_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "libiotame.so" in out and "iotame-kernel" in out and "Python" in out


def test_mpi_version_parsing():
    from iotame.info import parse_mpi_version
    assert parse_mpi_version("MPICH Version:    \t4.0.2\nMPICH Release date: x") == \
        {"implementation": "MPICH", "version": "4.0.2"}
    assert parse_mpi_version("mpiexec (OpenRTE) 4.1.2\n") == {"implementation": "Open MPI", "version": "4.1.2"}
    assert parse_mpi_version("mpiexec (Open MPI) 5.0.3\n") == {"implementation": "Open MPI", "version": "5.0.3"}
    assert parse_mpi_version("HYDRA build details:\n    Version:   4.1\n")["version"] == "4.1"
    assert parse_mpi_version("") == {"implementation": None, "version": None}


def test_public_names():
    for name in iotame.__all__:
        assert hasattr(iotame, name), name
    for mod in map(importlib.import_module, ("iotame.bench", "iotame.runner", "iotame.config", "iotame.stats")):
        for name in mod.__all__:
            assert hasattr(mod, name), name
