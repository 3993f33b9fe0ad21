"""The registries (modules in runtime/src/core/modules.c, strategies in runtime/src/collective/registry.c) and
runtime/settings.json describe the same runtime: a module, section, strategy or strategy option added to one and not
the other fails here."""
import ctypes
import json

import pytest

from conftest import LIBIOTAME, ROOT

SETTINGS = json.loads((ROOT / "runtime" / "settings.json").read_text())
SECTIONS = SETTINGS["sections"]


@pytest.fixture(scope="module")
def registry():
    lib = ctypes.CDLL(str(LIBIOTAME))  # no MPI_Init: iotame_registry needs none
    lib.iotame_registry.restype = ctypes.c_char_p
    return json.loads(lib.iotame_registry().decode())


def test_every_module_names_a_unique_statistics_section(registry):
    names = [m["name"] for m in registry["modules"]]
    assert len(names) == len(set(names))
    assert names[0] == "stats"  # counts every call as the application made it, before any module acts on it
    assert {"stats", "collective"} <= set(names)


def test_each_settings_section_has_an_owner_and_each_module_owns_its_section(registry):
    modules = {m["name"]: m for m in registry["modules"]}
    for name, section in SECTIONS.items():
        owner = section.get("owner")
        assert owner in {"core", "reserved"} | set(modules), f"settings.json section {name}: owner {owner!r}"
        if owner in modules:
            assert modules[owner]["settings"] == name, f"module {owner} does not read section {name}"
        if owner == "reserved":
            assert section["settings"] == {}, f"reserved section {name} describes settings no module reads"
    for m in registry["modules"]:
        if m["settings"] is not None:
            assert SECTIONS.get(m["settings"], {}).get("owner") == m["name"], \
                f"module {m['name']} reads section {m['settings']}, which settings.json does not give it"


def test_strategies_agree_with_the_settings(registry):
    (coll,) = [m for m in registry["modules"] if m["name"] == "collective"]
    strategies = [s["name"] for s in coll["strategies"]]
    settings = SECTIONS["collective"]["settings"]
    assert strategies[0] == "passthrough"  # index 0 is the library's own collective I/O everywhere
    # the strategy that chooses among the registry's (auto) is listed apart: no candidate, no number
    chooser = coll["chooser"]
    assert chooser["name"] == "auto" and chooser["name"] not in strategies
    assert set(settings["strategy"]["values"]) == set(strategies) | {chooser["name"]}
    assert set(settings["candidates"]["items"]["values"]) == set(strategies)
    assert set(settings["candidates"]["default"]) <= set(strategies)
    for s in coll["strategies"]:
        for option in s["options"]:
            assert option in settings, f"strategy {s['name']}: option {option} is not in settings.json"
            assert settings[option].get("strategy") == s["name"], \
                f"settings.json collective.{option} does not say it belongs to strategy {s['name']}"
    owned = {o for s in coll["strategies"] for o in s["options"]}
    for key, setting in settings.items():
        if "strategy" in setting and key != "strategy":
            assert key in owned, f"collective.{key} says it belongs to {setting['strategy']}, which does not list it"
    for option in chooser["options"]:
        assert option in settings, f"auto: option {option} is not in settings.json"
        assert "strategy" not in settings[option], f"collective.{option} is auto's, not a fixed strategy's"
    # the engine's options (the nodes every engine strategy places its aggregators on) are marked "engine"
    engine = set(coll["engine"]["options"])
    assert engine == {key for key, setting in settings.items() if setting.get("engine")}
    assert not engine & (owned | set(chooser["options"]))
    # every collective setting is read by someone: the strategy itself, a fixed strategy's option, auto's, the engine's
    assert set(settings) == {"strategy"} | owned | set(chooser["options"]) | engine


def test_each_strategy_sits_at_its_number_and_declares_its_model_term(registry):
    """The registry is generated from the strategy files (cmake/strategy_registry.cmake): each at its .number, which
    the selector, the statistics and the knowledge files use, so the existing ones keep theirs."""
    (coll,) = [m for m in registry["modules"] if m["name"] == "collective"]
    assert [s["number"] for s in coll["strategies"]] == list(range(len(coll["strategies"])))
    assert [s["name"] for s in coll["strategies"]][:6] == ["passthrough", "two_phase", "node_local", "target_aligned",
                                                           "independent", "view_based"]
    for s in coll["strategies"][:6]:
        assert s["model"] == s["name"]  # each of these is predicted by the model's term of its name
