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


# ---- ties through function pointers ----
#
# Includes do not show every tie: a part that fills an interface's function pointers (a table it registers on a
# record) is called by the part that calls through them, whatever either includes. The layering below sees those
# calls: which part fills an interface's function pointers (a designated initializer of the interface's type naming
# its functions), which part calls them (a call through a variable or field of that type), and which parts depend on
# which otherwise (includes, and reads of another part's settings section). A tie between two parts runs one way:
# the part whose functions are called must not depend on the caller by any path. The core is left out: it calls every
# module through the registry (core/module.h's iotame_module_t) by design, and every part includes it.

import json

SETTINGS = json.loads((ROOT / "runtime" / "settings.json").read_text())["sections"]
# A setting that belongs to another part than its section's owner: collective.profile says where the machine profile
# is found, and profile/ (iotame_profile_for) is its one reader.
SETTING_OWNER = {("collective", "profile"): "profile"}


def stripped(path):
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)


def interfaces(root=SRC):
    """{type name: set of its function-pointer members}, for every struct declared in a header of the runtime."""
    out = {}
    for path in root.rglob("*.h"):
        text = stripped(path)
        tags = dict((tag, name) for tag, name in re.findall(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", text))
        for tag, body, name in re.findall(r"(?:typedef\s+)?struct\s*(\w*)\s*\{([^{}]*)\}\s*(\w*)\s*;", text):
            name = name or tags.get(tag)
            members = set(re.findall(r"\(\s*\*\s*(\w+)\s*\)\s*\(", body))
            if name and members:
                out.setdefault(name, set()).update(members)
    return out


def pointer_ties(root=SRC):
    """{(caller part, filler part, interface)}: calls through an interface's function pointers that another part
    filled."""
    kinds = interfaces(root)
    files = sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h"))
    texts = {p: stripped(p) for p in files}
    fillers, names = {}, {}
    for path, text in texts.items():
        part = path.relative_to(root).parts[0]
        for kind in kinds:
            for body in re.findall(rf"\b{kind}\s+\w+\s*=\s*\{{(.*?)\}};", text, re.S):
                if re.search(r"\.\w+\s*=\s*&?\w+", body):
                    fillers.setdefault(kind, set()).add(part)
            # variables, parameters and fields of the interface's type (pointers to it)
            for name in re.findall(rf"\b{kind}\s*\*\s*(?:const\s+)?(\w+)", text):
                names.setdefault(kind, set()).add(name)
    ties = set()
    for path, text in texts.items():
        part = path.relative_to(root).parts[0]
        for kind, members in kinds.items():
            for name in names.get(kind, ()):
                for member in set(re.findall(rf"\b{name}\s*->\s*(\w+)\s*\(", text)) & members:
                    ties.update((part, filler, kind) for filler in fillers.get(kind, ()) if filler != part)
    return ties


def dependencies(root=SRC):
    """{(part, part it depends on): why}: includes and reads of another part's settings section."""
    deps = {}
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h")):
        part, where = path.relative_to(root).parts[0], path.relative_to(root).as_posix()
        for inc in includes(path):
            if "/" in inc:
                deps.setdefault((part, inc.split("/", 1)[0]), f"{where} includes {inc}")
        text = stripped(path)
        reads = re.findall(r'iotame_(?:config|file)_(?:setting|value|any)\(\s*[^,()]+(?:\([^()]*\))?,\s*"(\w+)",\s*"(\w+)"',
                           text)
        for section, key in reads:
            owner = SETTING_OWNER.get((section, key)) or SETTINGS.get(section, {}).get("owner")
            deps.setdefault((part, owner), f"{where} reads {section}.{key}")
    return {edge: why for edge, why in deps.items() if edge[0] != edge[1]}


def reaches(edges, start, goal):
    seen, todo = {start}, [start]
    while todo:
        here = todo.pop()
        if here == goal:
            return True
        for a, b in edges:
            if a == here and b not in seen:
                seen.add(b)
                todo.append(b)
    return False


def one_way_violations(root=SRC):
    """The ties through function pointers that run both ways: the called part depends on its caller."""
    ties = {(a, b, k) for a, b, k in pointer_ties(root) if "core" not in (a, b)}
    deps = dependencies(root)
    edges = set(deps) | {(a, b) for a, b, _ in ties}
    out = []
    for caller, callee, kind in sorted(ties):
        if reaches(edges - {(caller, callee)}, callee, caller):
            how = deps.get((callee, caller), "through other parts")
            out.append(f"{caller} calls {callee}'s functions through {kind}, and {callee} depends on {caller} ({how})")
    return out


def test_the_pointer_ties_are_seen():
    """The collective engine calls the stage module's functions through an interface the core declares: the test
    must see that tie, or it could not judge it."""
    ties = pointer_ties()
    assert any(a == "collective" and b == "stage" for a, b, _ in ties), ties
    for _, _, kind in ties:
        assert any(kind in stripped(SRC / "core" / h) for h in PUBLIC["core"]), f"{kind} is not declared by the core"


def test_ties_through_function_pointers_run_one_way():
    """A part whose functions another part calls through an interface (the block consumer: stage's functions, called
    by the collective engine) neither includes, nor reads the settings of, nor calls through pointers the caller."""
    assert not one_way_violations()


def test_no_strategy_is_recognised_by_identity():
    """What a strategy can do is a property it declares in its table (strategy.h), not a comparison of its address."""
    for path in sources():
        assert not re.search(r"[=!]=\s*&iotame_strategy_\w+|&iotame_strategy_\w+\s*[=!]=", stripped(path)), \
            f"{path.relative_to(SRC)} compares a strategy's address"


# ---- sizes ----
# Issue 47's shape step: no file of the runtime over 700 lines, no struct over 20 fields unless the comment before it
# says why ("over 20 fields").


def struct_fields(body):
    n = 0
    for decl in (d.strip() for d in body.split(";")):
        if decl:
            n += 1 if re.search(r"\(\s*\*", decl) else re.sub(r"\[[^\]]*\]", "", decl).count(",") + 1
    return n


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_files_and_structs_stay_small(path):
    assert len(path.read_text().splitlines()) <= 700, f"{path.relative_to(SRC)} is over 700 lines"
    text = path.read_text()
    for m in re.finditer(r"(/\*(?:(?!\*/).)*\*/\s*)?(?:typedef\s+)?struct\s*(\w*)\s*\{([^{}]*)\}\s*(\w*)\s*;", text, re.S):
        body = re.sub(r"/\*.*?\*/", "", m.group(3), flags=re.S)
        if struct_fields(body) > 20:
            assert m.group(1) and "over 20 fields" in re.sub(r"\s+\*?\s*", " ", m.group(1)).lower(), \
                f"{path.relative_to(SRC)}: struct {m.group(4) or m.group(2)} has {struct_fields(body)} fields"
