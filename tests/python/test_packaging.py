"""packaging/: the Lmod module file loads a one-prefix install for real; the Spack recipe, without Spack on this
machine, is run against a small stand-in for `spack.package`: its CMake arguments configure the checkout and its
Python step installs the command where the recipe's prefix holds the CMake install."""
import ast
import contextlib
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from .venvs import venv_with_checkout_deps

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
RECIPE = ROOT / "packaging/spack/packages/iotame/package.py"
MODULE = ROOT / "packaging/modules/iotame.lua"
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")


def cmake_install(prefix: Path) -> None:
    if not (BUILD / "CMakeCache.txt").exists():
        pytest.fail("needs the build of make setup (build/)")
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True, capture_output=True)


def package_copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return src


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}


@pytest.mark.skipif(not LMOD_INIT.exists(), reason="Lmod is not installed (Debian's lmod; make setup installs it)")
def test_the_module_file_loads_a_one_prefix_install(tmp_path):
    prefix = tmp_path / "opt/iotame/0.1.0"
    p = subprocess.run([str(venv_with_checkout_deps(prefix)), "-m", "pip", "install", "-q", "--no-deps",
                        "--disable-pip-version-check", str(package_copy(tmp_path))], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    cmake_install(prefix)
    modules = tmp_path / "modulefiles/iotame"
    modules.mkdir(parents=True)
    text = MODULE.read_text()
    assert 'local prefix = "/opt/iotame/0.1.0"' in text
    (modules / "0.1.0.lua").write_text(text.replace('"/opt/iotame/0.1.0"', json.dumps(str(prefix))))
    script = (f"source {LMOD_INIT} && module use {tmp_path / 'modulefiles'} && module load iotame && "
              "iotame info --json && IOTAME_PREFIX= iotame info --json && pkg-config --variable=prefix iotame")
    p = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=clean_env(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    decode = json.JSONDecoder().raw_decode
    first, end = decode(p.stdout)
    rest = p.stdout[end:].strip()
    second, end = decode(rest)
    rest = rest[end:]
    assert first["runtime"] == {"source": "IOTAME_PREFIX", "prefix": str(prefix)}
    assert second["runtime"] == {"source": "python prefix", "prefix": str(prefix)}   # without the variable
    for info in (first, second):
        assert all(info[part]["exists"] for part in ("libiotame", "kernel", "config_tool", "settings"))
        assert info["checkout"] is None
    assert Path(rest.strip()).resolve() == prefix.resolve()


class _Spec:
    """The parts of a Spack spec the recipe reads."""

    def __init__(self, hdf5: bool):
        self.hdf5 = hdf5
        self.deps = {"mpi": types.SimpleNamespace(mpicc="/usr/bin/mpicc", prefix="/usr"),
                     "hdf5": types.SimpleNamespace(prefix="/usr")}

    def __getitem__(self, name):
        return self.deps[name]

    def satisfies(self, constraint: str) -> bool:
        return constraint == ("+hdf5" if self.hdf5 else "~hdf5")


def _stand_in(directives: list) -> types.ModuleType:
    """spack.package as far as the recipe uses it: directives are recorded, the rest does what Spack's does."""
    mod = types.ModuleType("spack.package")

    def directive(name):
        return lambda *args, **kwargs: directives.append((name, args, kwargs))

    for name in ("version", "variant", "depends_on", "extends", "license", "conflicts", "maintainers"):
        setattr(mod, name, directive(name))

    class CMakePackage:
        def define(self, name, value):
            value = ("ON" if value else "OFF") if isinstance(value, bool) else value
            return f"-D{name}={value}"

        def define_from_variant(self, name, variant):
            return self.define(name, self.spec.hdf5 if variant == "hdf5" else None)

    def run_after(phase):
        def mark(f):
            f.run_after = phase
            return f
        return mark

    @contextlib.contextmanager
    def working_dir(path):
        old = os.getcwd()
        os.chdir(path)
        try:
            yield
        finally:
            os.chdir(old)

    mod.CMakePackage, mod.run_after, mod.working_dir, mod.join_path = CMakePackage, run_after, working_dir, \
        os.path.join
    return mod


def load_recipe(monkeypatch) -> tuple[type, list]:
    directives = []
    spack = types.ModuleType("spack")
    spack.package = _stand_in(directives)
    monkeypatch.setitem(sys.modules, "spack", spack)
    monkeypatch.setitem(sys.modules, "spack.package", spack.package)
    namespace = {"__name__": "iotame_recipe"}
    exec(compile(RECIPE.read_text(), str(RECIPE), "exec"), namespace)
    return namespace["Iotame"], directives


def test_the_spack_recipe_parses_and_declares_what_the_build_needs(monkeypatch):
    ast.parse(RECIPE.read_text())
    assert (RECIPE.parent.parent.parent / "repo.yaml").is_file()
    cls, directives = load_recipe(monkeypatch)
    deps = {args[0] for name, args, _ in directives if name == "depends_on"}
    assert {"mpi", "jansson", "hdf5+mpi", "cmake@3.18:", "python@3.9:"} <= deps
    pyproject = (ROOT / "python/pyproject.toml").read_text()
    for dep in ("rich", "optuna", "matplotlib", "tomli"):          # every run dependency of the Python package
        assert dep in pyproject and any(d.startswith(f"py-{dep}") for d in deps), dep
    assert any(name == "variant" and args[0] == "hdf5" for name, args, _ in directives)
    assert cls.install_python_package.run_after == "install"


@pytest.mark.parametrize("hdf5", [True, False])
def test_the_recipes_cmake_arguments_configure_the_checkout(monkeypatch, tmp_path, hdf5):
    cls, _ = load_recipe(monkeypatch)
    pkg = cls()
    pkg.spec = _Spec(hdf5)
    args = pkg.cmake_args()
    p = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b"), *args], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ("parallel HDF5 from find_package(HDF5)" in p.stdout) == hdf5


def test_the_recipes_python_step_completes_the_cmake_install(monkeypatch, tmp_path):
    """The recipe's prefix after CMake's install and its Python step: `iotame` in bin/ finds the runtime there."""
    cls, _ = load_recipe(monkeypatch)
    prefix = tmp_path / "spack-prefix"
    cmake_install(prefix)
    pkg = cls()
    pkg.prefix = str(prefix)
    pkg.stage = types.SimpleNamespace(source_path=str(tmp_path / "stage"))
    shutil.copytree(package_copy(tmp_path), tmp_path / "stage/python")
    monkeypatch.setattr(os, "environ", dict(clean_env()))          # the recipe sets IOTAME_PREFIX in Spack's env
    calls = []

    # Spack's Executable for the Python the package extends: a fresh one (pip would uninstall this environment's
    # editable iotame to install another); its build needs setuptools and wheel, as the recipe declares
    builder = tmp_path / "spack-python"
    subprocess.run([sys.executable, "-m", "venv", str(builder)], check=True)
    subprocess.run([str(builder / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "setuptools>=64", "wheel"], check=True, capture_output=True, timeout=600)

    def python(*args):
        calls.append(args)
        subprocess.run([str(builder / "bin/python"), *args], check=True, capture_output=True, env=os.environ,
                       timeout=600)

    pkg.install_python_package.__func__.__globals__["python"] = python
    pkg.install_python_package()
    assert calls and calls[0][:3] == ("-m", "pip", "install") and "--no-deps" in calls[0]
    site = next(prefix.glob("lib/python3*/site-packages"))
    deps = next(Path(sys.prefix).glob("lib/python3*/site-packages"))    # rich, optuna, ...: Spack's py- packages
    env = dict(clean_env(), PYTHONPATH=f"{site}:{deps}")           # what `spack load` adds for extensions
    p = subprocess.run([str(prefix / "bin/iotame"), "info", "--json"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["runtime"] == {"source": "built-in prefix", "prefix": str(prefix)}
    assert info["libiotame"]["exists"] and info["package"].startswith(str(site))
