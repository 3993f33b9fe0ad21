"""The Python package's modules depend on each other in one direction: no module imports one that imports it back,
directly or through others. Imports inside functions count as well as those at the top of a module: a deferred
import hides a circle from the interpreter, not from a reader."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "iotame"


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by the name of its __init__)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports anywhere in its text: `from X import Y` imports X.Y when Y is a
    module, else X. The packages above a module are not counted (their __init__ re-exporting it is not a circle)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.update(f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names)
    return {m for m in out if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imported(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module (Tarjan's algorithm), each shown as a
    path that closes on its first module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(circle_in(graph, component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def circle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A path inside `component` from its first module back to it (breadth first, so the shortest)."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError(f"no circle through {start} in {sorted(component)}")


def test_the_graph_sees_imports_at_every_level():
    """The walk finds what the check rests on: relative, absolute and function-level imports, a submodule named in
    `from . import`, and the package of `from ..x import name`."""
    graph = import_graph()
    assert "iotame.commands" in graph["iotame.cli"]                      # from .commands import COMMANDS
    assert "iotame.commands.tune" in graph["iotame.commands.advise"]     # from . import tune
    assert "iotame.config" in graph["iotame.commands.tune"]              # from ..config import ...
    assert "iotame.info" in graph["iotame.tune.job"]                     # inside srun_mpi()


def test_the_cycle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_one_that_imports_it_back():
    found = cycles(import_graph())
    assert not found, "import circles in python/iotame:\n" + "\n".join(" -> ".join(c) for c in found)
