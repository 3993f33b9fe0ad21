"""The Python side of configuration validation: a wrapper around the runtime's own validator (iotame-config).

config_cases.json is a corpus of configurations with the exact messages the C runtime (runtime/src/core/
config.c) prints for them, without the `iotame: config FILE: ` prefix; syntax errors compare only up to the
parenthesis, where the JSON parser's own words start. tests/unit/test_config.c runs it through the library and
the program; here it checks that Python hands files and in-memory configurations to the program and returns its
messages, naming file and key, unchanged.
"""
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from iotame import ConfigError, check_config, load_config, load_schema, save_config, validate
from iotame.cli import main
from iotame.config import check_configs, format_error, render_value, validate_many
from iotame.errors import IotameError, MissingFileError
from iotame.info import gather_info
from iotame.paths import ENV_CONFIG_TOOL, config_tool_path, settings_path
from iotame.settings import schema_from_dict

HERE = Path(__file__).resolve().parent
CASES = json.loads((HERE / "config_cases.json").read_text(encoding="utf-8"))


def write(tmp_path, text, name="c.json"):
    p = tmp_path / name
    p.write_text(text if isinstance(text, str) else json.dumps(text), encoding="utf-8")
    return p


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_corpus_gives_the_runtimes_messages(tmp_path, case):
    p = write(tmp_path, case["text"])
    got = check_config(p)
    prefix = f"iotame: config {p}: "
    assert all(line.startswith(prefix) for line in got), got
    got = [line[len(prefix):] for line in got]
    if "errors" in case:
        assert got == case["errors"]
    else:
        assert [g[:len(e)] for g, e in zip(got, case["errors_prefix"])] == case["errors_prefix"]
        assert len(got) == len(case["errors_prefix"])


# Cases whose text Python's json reads as the runtime does (not: syntax errors, duplicates, NaN, overflow).
IN_MEMORY = [c for c in CASES if "errors" in c and not any(e.startswith("line ") for e in c["errors"])]


def test_in_memory_configurations_get_the_runtimes_messages():
    """validate() of the parsed corpus, every case in one run of the program, gives the corpus's lines."""
    assert len(IN_MEMORY) > 35
    got = validate_many([json.loads(c["text"]) for c in IN_MEMORY], "mem.json")
    assert len(got) == len(IN_MEMORY)
    for case, lines in zip(IN_MEMORY, got):
        assert lines == [f"iotame: config mem.json: {e}" for e in case["errors"]], case["name"]


def test_check_configs_answers_each_file_in_order(tmp_path):
    files = [write(tmp_path, c["text"], f"{c['name']}.json") for c in CASES]
    got = check_configs(files)
    assert [bool(g) for g in got] == [bool(c.get("errors", c.get("errors_prefix"))) for c in CASES]
    assert all(line.startswith(f"iotame: config {f}: ") for f, lines in zip(files, got) for line in lines)
    assert check_configs([]) == []


def test_corpus_covers_every_kind_of_error():
    names = {c["name"] for c in CASES}
    for kind in ("valid", "unknown-top-level-key", "unknown-section", "unknown-hint", "integer-as-string",
                 "enum-value", "integer-below-min", "boolean-for-integer", "rule-without-match",
                 "match-in-defaults", "staging-unknown-key", "process-setting-in-a-file-rule", "version-2", "extra-hint-list",
                 "syntax-missing-comma", "duplicate-key"):
        assert kind in names


def test_documented_examples(tmp_path):
    doc = {
        "version": 1,
        "defaults": {"mpiio_hints": {"romio_cb_write": "disable", "cb_buffer_size": 16777216}, "override": False},
        "files": [{"match": "*.h5", "mpiio_hints": {"cb_nodes": 2}, "override": True},
                  {"match": "/scratch/run*/chk_*", "mpiio_hints_extra": {"my_vendor_hint": "1"}}],
    }
    assert validate(doc, "F") == []
    bad = {"version": 2, "defaults": {"mpiio_hints": {"romio_cb_write": "on"}, "colective": {}},
           "files": [{"match": "*", "mpiio_hints": {"cb_nodes": "four"}}]}
    errors = validate(bad, "F")
    assert errors[0] == "iotame: config F: version: expected 1, got 2"
    assert errors[1] == ("iotame: config F: defaults.mpiio_hints.romio_cb_write: "
                         "expected one of enable, disable, automatic, got \"on\"")
    assert errors[2].startswith("iotame: config F: defaults.colective: unknown key (expected one of: ")
    assert errors[3] == 'iotame: config F: files[0].mpiio_hints.cb_nodes: expected an integer >= 1, got "four"'


def test_invalid_json_reports_line_and_column(tmp_path):
    p = write(tmp_path, '{\n  "version": 1,\n  "defaults": {\n    "override": tru\n  }\n}\n')
    (line,) = check_config(p)
    assert line.startswith(f"iotame: config {p}: line 4, column 19: invalid JSON (")


def test_missing_file(tmp_path):
    p = tmp_path / "nope.json"
    assert check_config(p) == [f"iotame: config {p}: cannot read: No such file or directory"]
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert e.value.errors == [f"iotame: config {p}: cannot read: No such file or directory"]


def test_load_config_returns_the_object_or_raises_with_every_error(tmp_path):
    assert load_config(write(tmp_path, {"version": 1, "meta": {"x": 1}})) == {"version": 1, "meta": {"x": 1}}
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, {"defaults": {"override": 0}, "x": 1}))
    assert len(e.value.errors) == 3


def test_save_config_validates_then_writes(tmp_path):
    p = save_config({"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 4}}}, tmp_path / "t.json")
    assert load_config(p)["defaults"]["mpiio_hints"]["cb_nodes"] == 4
    with pytest.raises(ConfigError):
        save_config({"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 0}}}, tmp_path / "u.json")
    assert not (tmp_path / "u.json").exists()


def test_schema_is_read_from_settings_json():
    schema = load_schema()
    raw = json.loads(settings_path().read_text())
    assert schema.path == settings_path()
    assert schema.config_version == raw["config_version"] == 1
    assert list(schema.sections) == list(raw["sections"])
    hints = schema.sections["mpiio_hints"]
    assert list(hints.settings) == list(raw["sections"]["mpiio_hints"]["settings"])
    assert hints.settings["cb_buffer_size"].type == "integer" and hints.settings["cb_buffer_size"].min == 1024
    assert hints.settings["romio_cb_write"].values == ("enable", "disable", "automatic")
    assert schema.sections["mpiio_hints_extra"].free
    assert not any(s.reserved for s in schema.sections.values())  # every section has its module now
    raw["sections"]["future"] = {"owner": "reserved", "settings": {}}
    assert schema_from_dict(raw).sections["future"].reserved
    assert set(schema.rule_keys) == {"match", "override"}


def test_validation_follows_the_schema(tmp_path):
    """A setting added to settings.json is accepted and checked with no change to the Python code."""
    raw = json.loads(settings_path().read_text())
    raw["sections"]["future"] = {"owner": "reserved", "settings": {"window": {"type": "integer", "min": 2, "max": 8},
                                                                   "mode": {"type": "boolean"}}}
    p = tmp_path / "settings.json"
    p.write_text(json.dumps(raw))
    schema = load_schema(p)
    ok = {"version": 1, "defaults": {"future": {"window": 4, "mode": True}}}
    assert validate(ok, "F", schema) == []
    bad = {"version": 1, "defaults": {"future": {"window": 9, "mode": 1, "x": 1}}}
    assert validate(bad, "F", schema) == [
        "iotame: config F: defaults.future.window: expected an integer from 2 to 8, got 9",
        "iotame: config F: defaults.future.mode: expected true or false, got 1",
        "iotame: config F: defaults.future.x: unknown key (expected one of: mode, window)",
    ]


def test_a_schema_built_in_memory_reaches_the_validator():
    """The tuner's tests change the settings description in memory: the program validates against that one."""
    raw = json.loads(settings_path().read_text())
    raw["sections"]["staging"]["settings"]["depth"] = {"type": "integer", "min": 1}
    schema = schema_from_dict(raw)
    config = {"version": 1, "defaults": {"staging": {"depth": 2}}}
    assert validate(config, "F", schema) == []
    assert validate({"version": 1, "defaults": {"staging": {"depth": 0}}}, "F", schema) == [
        "iotame: config F: defaults.staging.depth: expected an integer >= 1, got 0"]
    assert validate(config, "F")[0].startswith(  # the runtime's own description has no such setting
        "iotame: config F: defaults.staging.depth: unknown key (expected one of: cache_mb,")


def test_missing_program_says_to_run_make_setup(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV_CONFIG_TOOL, str(tmp_path / "nowhere" / "iotame-config"))
    with pytest.raises(MissingFileError) as e:
        validate({"version": 1}, "F")
    assert "iotame-config" in str(e.value) and "make setup" in str(e.value)
    good = write(tmp_path, {"version": 1})
    assert main(["config", "check", str(good)]) == 2         # no program: no verdict, not "ok"
    err = capsys.readouterr()
    assert "ok" not in err.out and "make setup" in err.err
    assert gather_info()["config_tool"] == {"path": str(tmp_path / "nowhere" / "iotame-config"), "exists": False,
                                            "from": ENV_CONFIG_TOOL}


def test_a_failing_program_is_an_error_not_a_verdict(tmp_path, monkeypatch):
    fake = tmp_path / "iotame-config"
    fake.write_text("#!/bin/sh\necho 'iotame-config: broken' >&2\nexit 2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(ENV_CONFIG_TOOL, str(fake))
    with pytest.raises(IotameError) as e:
        validate({"version": 1}, "F")
    assert "iotame-config: broken" in str(e.value) and not isinstance(e.value, ConfigError)
    fake.write_text("#!/bin/sh\ncat >/dev/null\n")          # says nothing: no answer is not "valid"
    with pytest.raises(IotameError):
        check_config(write(tmp_path, {"version": 1}))


def test_the_programs_check_mode(tmp_path):
    """`iotame-config check`: files and stdin, the runtime's lines on stderr, exit status 1 when one is invalid."""
    good, bad = write(tmp_path, {"version": 1}, "good.json"), write(tmp_path, {"version": 2}, "bad.json")
    p = subprocess.run([config_tool_path(), "check", good, bad], capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (1, f"{good}: ok\n")
    assert p.stderr == f"iotame: config {bad}: version: expected 1, got 2\n"
    p = subprocess.run([config_tool_path(), "check", "--name", "stdin.json", "-"], input='{"version": 1, "x": 0}',
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr == "iotame: config stdin.json: x: unknown key (expected one of: defaults, files, meta, version)\n"
    assert subprocess.run([config_tool_path(), "check", good], capture_output=True).returncode == 0
    assert subprocess.run([config_tool_path()], capture_output=True).returncode == 2


def test_info_names_the_program():
    info = gather_info()["config_tool"]
    assert info == {"path": str(config_tool_path()), "exists": True, "from": "checkout"}
    assert os.access(info["path"], os.X_OK)


def test_booleans_are_not_integers():
    assert validate({"version": True}, "F") == ["iotame: config F: version: expected 1, got true"]
    errors = validate({"version": 1, "defaults": {"mpiio_hints_extra": {"h": True}}}, "F")
    assert errors == ["iotame: config F: defaults.mpiio_hints_extra.h: expected a string or an integer, got true"]


def test_rendering_of_values_in_python_messages():
    """What the space files' own messages show (the validator's messages come from C)."""
    assert render_value("four") == '"four"'
    assert render_value([1, 2]) == "array" and render_value({}) == "object"
    assert render_value(None) == "null" and render_value(False) == "false" and render_value(2.5) == "2.5"
    assert format_error("F", "", "cannot read: x") == "iotame: config F: cannot read: x"
    assert format_error("F", "a.b", "m") == "iotame: config F: a.b: m"


def test_config_check_cli(tmp_path, capsys):
    good = write(tmp_path, {"version": 1}, "good.json")
    bad = write(tmp_path, {"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 0, "romio_cb_read": "x"}}},
                "bad.json")
    assert main(["config", "check", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: ok\n"
    assert main(["config", "check", str(bad), str(good)]) == 1
    out = capsys.readouterr()
    assert out.out == f"{good}: ok\n"
    assert out.err.splitlines() == [
        f"iotame: config {bad}: defaults.mpiio_hints.cb_nodes: expected an integer >= 1, got 0",
        f"iotame: config {bad}: defaults.mpiio_hints.romio_cb_read: expected one of enable, disable, automatic, "
        f"got \"x\"",
    ]
    assert main(["config", "check", str(tmp_path / "missing.json")]) == 1
    assert "cannot read: No such file or directory" in capsys.readouterr().err
