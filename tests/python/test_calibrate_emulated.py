"""iotame calibrate --config: the storage points measured on one target of the runtime's emulated storage."""
import json
import os
import shutil
from dataclasses import replace

import pytest

from iotame.calibrate import QUICK, Calibration, load_profile
from iotame.calibrate.emulated import (START_LIB, EmulatedStorage, derived_config, emulate_section,
                                       emulated_layout)
from iotame.cli import main
from iotame.config import validate
from iotame.errors import ConfigError
from iotame.paths import config_tool_path, lib_path

needs_validator = pytest.mark.skipif(not config_tool_path().is_file(), reason="iotame-config is not built")
needs_emulation = pytest.mark.skipif(
    shutil.which("fio") is None or not (lib_path().parent / START_LIB).is_file(),
    reason="fio or libiotame-start.so missing")

EMULATE = {"device": "disk", "targets": 6, "target_unit": 65536, "write_behind": False, "position_ms": 5}


def _config(tmp_path, defaults):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"version": 1, "defaults": defaults}))
    return path


def test_the_derived_configuration_emulates_one_target_for_every_file(tmp_path):
    derived = derived_config(EMULATE, tmp_path / "state")
    assert derived["defaults"]["emulate"] == dict(EMULATE, targets=1, state=str(tmp_path / "state"))
    assert derived["defaults"]["posix"] == {"all_files": True}
    assert EMULATE["targets"] == 6                       # the caller's section is left as it was
    if config_tool_path().is_file():
        assert validate(derived, "derived.json") == []


def test_the_layout_is_the_configurations_with_the_runtimes_defaults(tmp_path):
    assert emulated_layout(EMULATE, "/c.json") == {"targets": 6, "stripe_unit": 65536, "layout_from": "emulate (/c.json)"}
    assert emulated_layout({"device": "raid5"}, "c.json")["targets"] == 1
    assert emulated_layout({"device": "raid5"}, "c.json")["stripe_unit"] == 1048576


@needs_validator
@pytest.mark.parametrize("defaults, key, expected", [
    ({}, "defaults.emulate", "expected an object"),
    ({"emulate": {"targets": 2}}, "defaults.emulate.device", "got missing"),
    ({"emulate": {"device": "none"}}, "defaults.emulate.device", 'got "none"'),
])
def test_a_configuration_without_an_emulated_device_is_refused(tmp_path, capsys, defaults, key, expected):
    path = _config(tmp_path, defaults)
    with pytest.raises(ConfigError) as e:
        emulate_section(path)
    assert f"calibrate --config {path}: {key}: " in str(e.value) and expected in str(e.value)
    assert main(["calibrate", "--dir", str(tmp_path), "--config", str(path), "--out", str(tmp_path / "p.json")]) == 2
    assert key in capsys.readouterr().err and not (tmp_path / "p.json").exists()
    assert main(["calibrate", "--dir", str(tmp_path), "--config", str(path)]) == 2     # --out is needed
    assert "give --out" in capsys.readouterr().err


@needs_validator
def test_an_invalid_configuration_is_refused_by_the_runtimes_validator(tmp_path):
    with pytest.raises(ConfigError) as e:
        emulate_section(_config(tmp_path, {"emulate": {"device": "disk", "targets": 99}}))
    assert "emulate.targets" in str(e.value)


@needs_validator
@needs_emulation
def test_fio_waits_as_on_the_emulated_disk(tmp_path):
    """4 KiB scattered reads from the page cache: microseconds each without emulation, at least position_ms (5 ms)
    each under it."""
    settings = replace(QUICK, sizes=(4096,), max_ios=2048)
    dirs = [tmp_path / "plain", tmp_path / "emulated"]
    for d in dirs:
        d.mkdir()
    emulated = EmulatedStorage.from_config(_config(tmp_path, {"emulate": EMULATE}), tmp_path)
    mbs = {}
    try:
        for d, env in zip(dirs, (None, emulated.env)):
            cal = Calibration(d, settings, drop=False, env=env)
            try:
                cal.layout()
                mbs[d.name] = cal.point("read", "scattered", 4096)
            finally:
                cal.cleanup()
    finally:
        emulated.cleanup()
    assert mbs["emulated"] <= 4096 / 5e-3 / 1e6 * 1.01
    assert mbs["emulated"] * 20 < mbs["plain"]
    assert sorted(os.listdir(tmp_path)) == ["cfg.json", "emulated", "plain"]   # state and derived config gone


@needs_validator
@needs_emulation
def test_calibrate_quick_with_config_describes_the_emulated_layout_and_checks_under_it(tmp_path, capsys):
    cfg = _config(tmp_path, {"emulate": EMULATE})
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "p.json"
    assert main(["calibrate", "--quick", "--dir", str(data), "--config", str(cfg), "--out", str(out), "--json"]) == 0
    profile = load_profile(out)
    assert json.loads(capsys.readouterr().out) == profile
    fs = profile["filesystem"]
    assert (fs["targets"], fs["stripe_unit"], fs["layout_from"]) == (6, 65536, f"emulate ({cfg.resolve()})")
    assert profile["emulated"] == EMULATE
    assert any("EMULATED" in n for n in profile["notes"])
    st = profile["storage"]
    scattered = dict(map(tuple, st["read"]["scattered"]))
    assert scattered[4096] <= 4096 / 5e-3 / 1e6 * 1.01      # every scattered request positions
    assert st["write_back"]["absorbed_bytes"] == 0          # the emulated disk delays buffered writes too
    assert os.listdir(data) == []
    # --check re-measures under the profile's emulation: no point above the emulated disk's 60 MB/s
    assert main(["calibrate", "--dir", str(data), "--check", str(out), "--tolerance", "99", "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert len(points) == 2 and all(p["measured_mbs"] <= 60 * 1.01 for p in points)
    assert os.listdir(data) == []


def test_the_emulated_key_must_be_an_object():
    from iotame.calibrate import validate_profile
    from .test_calibrate import good_profile
    p = good_profile()
    p["emulated"] = "disk"
    assert validate_profile(p) == ["emulated: expected an object (the emulate section the storage was measured "
                                   "under), got \"disk\""]
    p["emulated"] = EMULATE
    assert validate_profile(p) == []
