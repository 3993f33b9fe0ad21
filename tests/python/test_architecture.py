"""The runtime's folders are its architecture (DESIGN.md): each folder under runtime/src has one header that is its
only interface to the others, the parts depend on each other in one direction, names internal to a part stay in it,
and the collective selector's policy is pure. A change that breaks one of these rules fails here."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "runtime" / "src"

# Each part's interface to the others. core has three headers of distinct concerns (state/statistics, the
# configuration without MPI, the module registry and the file record) and the knowledge store.
PUBLIC = {
    "core": {"core.h", "config.h", "module.h", "knowledge.h"},
    "intercept": {"intercept.h"},
    "posix": {"posix.h"},
    "flatten": {"flatten.h"},
    "select": {"select.h"},
    "profile": {"profile.h"},
    "collective": {"strategy.h"},
    "stage": {"stage.h"},
    "throttle": {"throttle.h"},
    "emulate": {"emulate.h"},
    "hdf5": {"hdf5.h"},
    "trace": {"trace.h"},
}

# Which parts a part may include: the core below everything; the wrappers' shared header (intercept) for the parts
# that define wrappers of their own (posix, hdf5); the POSIX layer's queries (paths, layouts, the node's segment) for
# the modules; the flattening for the parts that map views; the pure policy for the collective part, and the machine
# profile (read and found, for the model's predictions and the throttle's starting level) for the parts that predict
# from it. Nothing includes a module that acts on I/O (stage, collective, throttle, emulate): they reach each other
# only through the registry's hooks and the core.
ALLOWED = {
    "core": set(),
    "flatten": set(),
    "select": set(),
    "profile": {"core"},
    "intercept": {"core", "profile"},
    "posix": {"core", "intercept"},
    "hdf5": {"core", "intercept", "posix"},
    "stage": {"core", "flatten", "posix", "profile"},
    "collective": {"core", "flatten", "posix", "profile", "select"},
    "throttle": {"core", "posix", "profile"},
    "emulate": {"core", "posix"},
    "trace": {"core", "flatten"},
}

# Prefixes of names internal to a part (iotame__<prefix>_...).
INTERNAL = {"posix": "posix", "coll": "collective", "collective": "collective", "stage": "stage",
            "throttle": "throttle", "emulate": "emulate", "select": "select", "window": "collective",
            "flatten": "flatten", "hdf5": "hdf5"}


def sources():
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h"))


def part_of(path):
    return path.relative_to(SRC).parts[0]


def includes(path):
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M)


def test_every_folder_is_a_known_part():
    assert {p.name for p in SRC.iterdir() if p.is_dir()} == set(ALLOWED)


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_includes_follow_the_layering_and_name_only_public_headers(path):
    mine = part_of(path)
    for inc in includes(path):
        if "/" not in inc:
            continue  # its own folder's header, or iotame.h
        part, header = inc.split("/", 1)
        if part == mine:
            continue
        assert part in ALLOWED[mine], f"{path.relative_to(SRC)} includes {inc}: {mine} may not depend on {part}"
        assert header in PUBLIC[part], f"{path.relative_to(SRC)} includes {inc}, which is not {part}'s interface"


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_names_internal_to_a_part_stay_in_it(path):
    mine = part_of(path)
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    for prefix in set(re.findall(r"\biotame__([a-z0-9]+)_", text)):
        owner = INTERNAL.get(prefix)
        assert owner in (None, mine), f"{path.relative_to(SRC)} uses iotame__{prefix}_*, internal to {owner}/"


def test_the_selector_policy_is_pure():
    """select/ decides from ids and numbers: no MPI, no JSON, no registry of strategies, nothing of collective/."""
    for path in (SRC / "select").iterdir():
        text = path.read_text()
        assert not re.search(r'#\s*include\s+[<"](mpi\.h|jansson\.h|collective/|core/)', text), path.name
        assert "iotame_strategies" not in text and "MPI_" not in text and "json_" not in text, path.name


def test_the_router_knows_no_window_or_examination():
    text = (SRC / "collective" / "route.c").read_text()
    assert not re.search(r"window|exam", text, re.I)


def test_no_module_keeps_a_table_of_handles():
    """Per-handle state lives in the core record's slot (core/file.c): nothing outside it compares a stored
    MPI_File handle to find its state."""
    for path in sources():
        if path.relative_to(SRC).as_posix() == "core/file.c":
            continue
        text = path.read_text()
        assert not re.search(r"->fh\s*==\s*fh\b|\.fh\s*==\s*fh\b", text), f"{path.relative_to(SRC)} looks handles up"


def static_functions(path):
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    return set(re.findall(r"^static\s+(?:inline\s+)?[\w\s]+?\**\s*\b(\w+)\s*\([^;]*?\)\s*\{", text, re.M | re.S))


def test_static_function_names_say_whose_they_are():
    """A static function's name is unique in the runtime, so that grep and call graphs resolve it."""
    seen = {}
    for path in sources():
        if path.suffix != ".c":
            continue
        for name in static_functions(path):
            seen.setdefault(name, []).append(str(path.relative_to(SRC)))
    repeated = {n: f for n, f in seen.items() if len(f) > 1}
    assert not repeated, repeated
