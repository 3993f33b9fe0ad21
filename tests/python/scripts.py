"""Helpers for the tests of the project's scripts (bench/, scripts/): load one as a module."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script(relative: str, name: str):
    """The script at ROOT/relative (e.g. "bench/collective.py") imported as module `name`."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
