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


def test_info_json(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("IOTAME_KERNEL", str(tmp_path / "k"))
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kernel"] == {"path": str(tmp_path / "k"), "exists": False}
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
