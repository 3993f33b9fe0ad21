"""Search spaces: the TOML format with its exact error messages, and the built-in spaces from settings.json."""
import json

import pytest

from iotame.config import validate, validate_many
from iotame.settings import load_schema, schema_from_dict
from iotame.tune import UNSET, SpaceError, builtin_space, load_space, parse_space
from iotame.tune.space import config_for, flatten_rules, pow2_values


def write(tmp_path, text, name="space.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def errors(tmp_path, text, **kw):
    p = write(tmp_path, text)
    with pytest.raises(SpaceError) as e:
        load_space(p, **kw)
    return [line.replace(f"iotame: space {p}: ", "") for line in e.value.errors]


# --- the format ------------------------------------------------------------------------------------------------

def test_lists_and_pow2_ranges(tmp_path):
    space = load_space(write(tmp_path, """
[mpiio]
romio_cb_write = ["enable", "disable", "default", "enable"]
cb_buffer_size = {pow2 = [1048576, 4194304]}
cb_nodes = {pow2 = [1, "nprocs"]}
cb_config_list = {values = ["*:1"]}
"""), nprocs=6)
    assert space.keys() == ["mpiio.romio_cb_write", "mpiio.cb_buffer_size", "mpiio.cb_nodes", "mpiio.cb_config_list"]
    assert space.get("mpiio.romio_cb_write").choices == [UNSET, "enable", "disable"]     # default = unset, deduplicated
    assert space.get("mpiio.cb_buffer_size").values == (1048576, 2097152, 4194304)
    assert space.get("mpiio.cb_nodes").values == (1, 2, 4, 6)                          # the process count ends it
    assert space.size() == 3 * 4 * 5 * 2


def test_striping_table_and_base_builtin(tmp_path):
    text = """
base = "builtin"
[mpiio]
cb_config_list = false
romio_cb_write = ["disable"]
[striping]
striping_factor = [2, 4]
"""
    local = load_space(write(tmp_path, text), fs="local", nprocs=2)
    keys = local.keys()
    assert "mpiio.cb_config_list" not in keys and "striping.striping_factor" not in keys
    assert local.get("mpiio.romio_cb_write").values == ("disable",)
    assert local.get("mpiio.cb_buffer_size") == builtin_space("local", 2).get("mpiio.cb_buffer_size")
    assert "striping_factor left out: it matters on lustre, gpfs, cephfs only, and this is local" in local.notes
    assert len(local.notes) == len(set(local.notes))
    lustre = load_space(write(tmp_path, text), fs="lustre", nprocs=2)
    assert lustre.get("striping.striping_factor").values == (2, 4)
    assert lustre.get("striping.striping_unit") is not None                 # from the built-in space


def test_bad_toml(tmp_path):
    assert errors(tmp_path, "[mpiio\nx = 1\n") == [
        "invalid TOML (Expected ']' at the end of a table declaration (at line 1, column 7))"]


def test_missing_file(tmp_path):
    with pytest.raises(SpaceError) as e:
        load_space(tmp_path / "none.toml")
    assert e.value.errors == [f"iotame: space {tmp_path / 'none.toml'}: cannot read: No such file or directory"]


def test_unknown_layer_and_base(tmp_path):
    assert errors(tmp_path, 'base = "all"\n[stripping]\nx = 1\n[mpiio]\n') == [
        'base: expected "builtin" or "empty", got "all"',
        "stripping: unknown layer (expected one of: hdf5, iotame, mpiio, striping)"]
    assert errors(tmp_path, "mpiio = 3\n") == ["mpiio: expected a table of parameters, got integer"]


def schema_without(*sections):
    """The real schema with some sections emptied (reserved), as before the runtime gained their settings."""
    d = json.loads(load_schema().path.read_text())
    for name in sections:
        d["sections"][name]["settings"] = {}
    for section in d["sections"].values():        # what acts through the settings taken away acts as before them
        for setting in section.get("settings", {}).values():
            req = {k: v for k, v in setting.pop("requires", {}).items() if k.split(".")[0] not in sections}
            if req:
                setting["requires"] = req
    return schema_from_dict(d)


def test_unknown_parameters(tmp_path):
    got = errors(tmp_path, """
[mpiio]
cb_nodez = [1]
striping_factor = [4]
[striping]
cb_nodes = [1]
[hdf5]
alignmnt = [1]
[iotame.colective]
""")
    assert got[0].startswith("mpiio.cb_nodez: unknown parameter (expected one of: access_style, cb_buffer_size, ")
    assert got[1:3] == ["mpiio.striping_factor: unknown parameter (it belongs to the striping table)",
                        "striping.cb_nodes: unknown parameter (it belongs to the mpiio table)"]
    assert got[3].startswith("hdf5.alignmnt: unknown parameter (expected one of: ") and "alignment" in got[3]
    assert got[4:] == ["iotame.colective: unknown section (expected one of: collective, memory, staging, throttle)"]


def test_parameters_of_a_section_without_settings(tmp_path):
    doc = {"hdf5": {"alignment": [4096]}, "iotame": {"collective": {"strategy": ["two_phase"]}}}
    with pytest.raises(SpaceError) as e:
        parse_space(doc, "s.toml", schema=schema_without("hdf5", "collective"))
    assert e.value.errors == [
        "iotame: space s.toml: hdf5.alignment: unknown parameter (the runtime has no hdf5 settings yet)",
        "iotame: space s.toml: iotame.collective.strategy: unknown parameter (the runtime has no iotame collective "
        "settings yet)"]


def test_empty_list_and_bad_specs(tmp_path):
    assert errors(tmp_path, """
[mpiio]
cb_nodes = []
cb_buffer_size = {values = []}
cb_config_list = 4
romio_cb_read = {value = ["enable"]}
romio_cb_write = {pow2 = [1, 2], values = [1]}
romio_ds_read = [[1]]
""") == [
        "mpiio.cb_nodes: empty list of values",
        "mpiio.cb_buffer_size.values: empty list of values",
        "mpiio.cb_config_list: expected a list of values, {pow2 = [lo, hi]}, {values = [...]} or false, got integer",
        "mpiio.romio_cb_read: unknown key value (expected {pow2 = [lo, hi]} or {values = [...]})",
        "mpiio.romio_cb_write: needs exactly one of pow2, values (expected {pow2 = [lo, hi]} or {values = [...]})",
        "mpiio.romio_ds_read: values must be strings, numbers or booleans, got array"]


def test_bad_pow2_ranges(tmp_path):
    assert errors(tmp_path, """
[mpiio]
cb_buffer_size = {pow2 = [3, 8]}
cb_nodes = {pow2 = [1, 2, 4]}
ind_rd_buffer_size = {pow2 = [65536, 1000]}
ind_wr_buffer_size = {pow2 = [131072, 65536]}
romio_ds_write = {pow2 = [1, 2]}
""") == [
        "mpiio.cb_buffer_size.pow2: lo must be a power of two >= 1, got 3",
        "mpiio.cb_nodes.pow2: expected [lo, hi], got 3 items",
        'mpiio.ind_rd_buffer_size.pow2: hi must be a power of two or "nprocs", got 1000',
        "mpiio.ind_wr_buffer_size.pow2: lo 131072 is greater than hi 65536",
        "mpiio.romio_ds_write.pow2: romio_ds_write is not an integer setting (give a list of values)"]


def test_values_the_runtime_rejects(tmp_path):
    assert errors(tmp_path, """
[mpiio]
romio_cb_write = ["on", "enable"]
cb_nodes = [0, 2]
cb_buffer_size = [1.5]
cb_config_list = [4]
""") == [
        'mpiio.romio_cb_write: value "on" rejected by the runtime: expected one of enable, disable, automatic, '
        'got "on"',
        "mpiio.cb_nodes: value 0 rejected by the runtime: expected an integer >= 1, got 0",
        "mpiio.cb_buffer_size: value 1.5 rejected by the runtime: expected an integer >= 1024, got 1.5",
        "mpiio.cb_config_list: value 4 rejected by the runtime: expected a string, got 4"]


def test_fs_specific_parameter_is_left_out_with_a_note(tmp_path):
    space = load_space(write(tmp_path, "[striping]\nstriping_unit = [1048576]\n"), fs="local")
    assert len(space) == 0
    assert space.notes == ("striping_unit left out: it matters on lustre, gpfs, cephfs only, and this is local",)


# --- the built-in spaces -------------------------------------------------------------------------------------

def test_builtin_local_has_every_tunable_mpiio_hint_but_striping():
    space = builtin_space("local", 2)
    assert [k for k in space.keys() if k.startswith("mpiio.")] == [
                            "mpiio.cb_buffer_size", "mpiio.cb_nodes", "mpiio.cb_config_list", "mpiio.romio_cb_read",
                            "mpiio.romio_cb_write", "mpiio.romio_ds_read", "mpiio.romio_ds_write",
                            "mpiio.ind_rd_buffer_size", "mpiio.ind_wr_buffer_size"]
    assert space.get("mpiio.cb_nodes").values == (1, 2)
    assert space.get("mpiio.cb_buffer_size").values == tuple(pow2_values(1 << 20, 1 << 27))
    assert all(p.choices[0] == UNSET for p in space)


@pytest.mark.parametrize("fs", ["local", "lustre", "gpfs", "cephfs"])
def test_builtin_has_every_setting_with_a_tune_entry(fs):
    from iotame.tune.layers import param_key, layer_of
    space = builtin_space(fs, 4)
    for section, setting in load_schema().all_settings():
        if setting.tune and (setting.fs is None or fs in setting.fs):
            assert space.get(param_key(layer_of(section, setting.name), section, setting.name)) is not None, \
                setting.name


@pytest.mark.parametrize("fs", ["local", "lustre", "gpfs", "cephfs"])
def test_builtin_leaves_out_what_only_observes(fs):
    # the request trace changes what the statistics record, not the I/O: no study searches it
    assert "trace.requests" in {f"{s}.{st.name}" for s, st in load_schema().all_settings()}
    assert not any(p.section == "trace" for p in builtin_space(fs, 4))


@pytest.mark.parametrize("fs", ["lustre", "gpfs", "cephfs"])
def test_builtin_parallel_fs_adds_striping(fs):
    space = builtin_space(fs, 4)
    assert space.get("striping.striping_factor").values == (1, 2, 4, 8, 16, 32, 64)
    assert space.get("striping.striping_unit").section == "mpiio_hints"
    assert space.get("mpiio.cb_nodes").values == (1, 2, 4)
    assert not space.notes


def test_cephfs_striping_units_are_ones_cephfs_takes():
    """CephFS takes stripe units of whole 64 KiB (the runtime refuses others at run time with a warning): the built-in
    space tries none other."""
    units = builtin_space("cephfs", 4).get("striping.striping_unit").values
    assert units and all(u % 65536 == 0 for u in units)
    assert builtin_space("cephfs", 4).get("striping.start_iodevice") is None  # Lustre's only


def test_builtin_leaves_out_cb_nodes_for_one_process():
    space = builtin_space("local", 1)
    assert space.get("mpiio.cb_nodes") is None
    assert "cb_nodes left out: a single value for 1 process" in space.notes


def test_builtin_follows_settings_json():
    """A new runtime setting with a "tune" entry joins the built-in space with no change to the tuner."""
    d = json.loads(load_schema().path.read_text())
    d["sections"]["hdf5"]["settings"] = {}
    strategies = d["sections"]["collective"]["settings"]["strategy"]["values"]   # other settings require them
    d["sections"]["collective"]["settings"]["strategy"] = {
        "type": "enum", "values": strategies, "doc": "",
        "tune": {"values": ["passthrough", "two_phase"]}}
    d["sections"]["hdf5"]["settings"]["alignment"] = {"type": "integer", "min": 1, "doc": "",
                                                      "tune": {"pow2": [4096, 16384]}}
    schema = schema_from_dict(d)
    space = builtin_space("local", 2, schema)
    assert space.get("iotame.collective.strategy").values == ("passthrough", "two_phase")
    assert space.get("hdf5.alignment").values == (4096, 8192, 16384)
    point = {"iotame.collective.strategy": "two_phase", "hdf5.alignment": 8192}
    config = space.config(point)
    assert config == {"version": 1, "defaults": {"collective": {"strategy": "two_phase"}, "hdf5": {"alignment": 8192}}}
    assert validate(config, "c.json", schema) == []
    assert parse_space({"iotame": {"collective": {"strategy": ["two_phase"]}}}, "s.toml", schema=schema).keys() == \
        ["iotame.collective.strategy"]


def test_every_builtin_value_is_accepted_by_the_runtime():
    cases = [(p.key, v, config_for([(p, v)])) for fs in ("local", "lustre", "gpfs", "cephfs")
             for p in builtin_space(fs, 8)
             for v in p.values]
    errors = validate_many([c for _, _, c in cases], "c.json")  # one run of the runtime's validator
    assert [(k, v, e) for (k, v, _), e in zip(cases, errors) if e] == []


# --- points and configurations -------------------------------------------------------------------------------

def test_default_point_is_the_empty_configuration():
    space = builtin_space("lustre", 2)
    assert space.config(space.default_point()) == {"version": 1}
    point = dict(space.default_point(), **{"mpiio.cb_nodes": 2, "striping.striping_unit": 1048576})
    assert space.config(point, meta={"trial": 3}) == {
        "version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 2, "striping_unit": 1048576}}, "meta": {"trial": 3}}


def test_point_from_config_keeps_what_the_space_has():
    space = builtin_space("local", 2)
    point = space.point_from_config({"version": 1, "defaults": {"mpiio_hints": {
        "cb_nodes": 2, "cb_buffer_size": 3 << 20, "striping_factor": 4, "romio_ds_write": "disable"}}})
    assert point["mpiio.cb_nodes"] == 2 and point["mpiio.romio_ds_write"] == "disable"
    assert point["mpiio.cb_buffer_size"] == UNSET            # not one of the space's values
    assert "striping.striping_factor" not in point            # not in the space


def test_left_out_names_what_the_point_drops():
    space = builtin_space("local", 2)
    config = {"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 2, "cb_buffer_size": 3 << 20,
                                                         "striping_factor": 4}}}
    assert space.left_out(config) == ["mpiio_hints.cb_buffer_size", "mpiio_hints.striping_factor"]
    assert space.left_out({"version": 1}) == []


def test_flatten_rules_first_rule_wins_then_defaults():
    config = {"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 1, "romio_ds_write": "enable"},
                                         "staging": {"enabled": False}},
              "files": [{"match": "*.h5", "override": True, "mpiio_hints": {"cb_nodes": 2}},
                        {"match": "*", "mpiio_hints": {"cb_nodes": 4, "romio_cb_write": "enable"}}]}
    assert flatten_rules(config) == {"defaults": {
        "mpiio_hints": {"cb_nodes": 2, "romio_cb_write": "enable", "romio_ds_write": "enable"},
        "staging": {"enabled": False}}}


def test_space_json_round_trip():
    space = builtin_space("gpfs", 4)
    from iotame.tune import Space
    assert Space.from_json(json.loads(json.dumps(space.to_json()))) == space


def test_structured_values_travel_as_json():
    """A list-valued setting (hdf5 chunk) goes through the sampler as an encoded string."""
    d = json.loads(load_schema().path.read_text())
    d["sections"]["hdf5"]["settings"] = {"chunk": {"type": "list", "items": {"type": "integer", "min": 1},
                                                   "doc": ""}, "alloc_time": {"type": "enum", "doc": "",
                                                                              "values": ["default", "early"]}}
    schema = schema_from_dict(d)
    space = parse_space({"hdf5": {"chunk": [[64, 64], [128]], "alloc_time": ["default", "early"]}}, "s.toml",
                        schema=schema)
    chunk = space.get("hdf5.chunk")
    assert chunk.choices == [UNSET, "json:[64,64]", "json:[128]"]
    assert space.get("hdf5.alloc_time").choices == [UNSET, "default", "early"]      # "default" is a real value here
    config = space.config({"hdf5.chunk": "json:[64,64]"})
    assert config == {"version": 1, "defaults": {"hdf5": {"chunk": [64, 64]}}}
    assert validate(config, "c.json", schema) == []
    assert space.point_from_config(config)["hdf5.chunk"] == "json:[64,64]"
    with pytest.raises(SpaceError) as e:
        parse_space({"hdf5": {"chunk": [[0]]}}, "s.toml", schema=schema)
    assert e.value.errors[0].startswith("iotame: space s.toml: hdf5.chunk: value array rejected by the runtime: ")
