"""Which machine profile applies to a data file (calibrate/discover.py, docs/calibrate.md "Where the runtime finds
the profile"): the sources in order, the directories' order, matching by magic and device or path, refusals of a
named file; `iotame calibrate` without --out writing where the rule finds it; `iotame info --dir`."""
import json
import os
import shutil
from pathlib import Path

import pytest

from iotame.calibrate import fs_identity, save_profile
from iotame.calibrate.discover import (default_profile_path, discovery_report, find_profile, matches, profile_dirs,
                                       profile_sources, user_profile_dir)
from iotame.cli import main

from .profiles import good_profile


def profile_of(directory, **changes):
    """A valid profile keyed by `directory`'s real file system, its filesystem keys changed by `changes`."""
    p = good_profile()
    ident = fs_identity(directory)
    p["filesystem"] = {**{k: ident[k] for k in ("path", "type", "magic", "device")}, "targets": 1, "stripe_unit": 0,
                       **changes}
    return p


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return d


@pytest.fixture
def lib(tmp_path):
    """A libiotame.so path in a build tree: its profiles are in tmp/build/share/iotame/profiles."""
    return tmp_path / "build" / "runtime" / "libiotame.so"


def test_profile_dirs_user_then_prefix(tmp_path):
    prefix_dir = tmp_path / "p" / "share" / "iotame" / "profiles"
    lib = tmp_path / "p" / "lib" / "libiotame.so"
    assert profile_dirs(lib, {"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == [Path("/x/iotame/profiles"), prefix_dir]
    assert profile_dirs(lib, {"XDG_CONFIG_HOME": "", "HOME": "/h"})[0] == Path("/h/.config/iotame/profiles")
    assert profile_dirs(lib, {}) == [prefix_dir]
    assert profile_dirs(tmp_path / "build/runtime/libiotame.so", {})[0] == tmp_path / "build/share/iotame/profiles"
    assert user_profile_dir({}) is None


def test_matches_by_magic_and_device_or_path(tmp_path, data):
    assert matches(profile_of(data), data) is None
    assert matches(profile_of(tmp_path, path="/elsewhere"), data) is None           # the same device
    st = os.stat(data)
    here = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    ident = fs_identity(data)
    line = matches(profile_of(data, magic="0x1234"), data)
    assert line == (f"filesystem: expected the file system of {data.resolve()} (magic {ident['magic']}, "
                    f"device {here}), got magic 0x1234 device {here}")
    # another device (a network file system mounted by another client): the path decides
    assert matches(profile_of(data, device="999:9", path=str(tmp_path)), data) is None
    assert matches(profile_of(data, device="999:9", path=str(data)), data) is None
    assert "got magic" in matches(profile_of(data, device="999:9", path="/elsewhere"), data)
    assert "device 999:9" in matches(profile_of(data, device="999:9", path=str(data) + "2"), data)   # not a prefix
    assert "cannot stat" in matches(profile_of(data), tmp_path / "none")


def test_a_directory_gives_its_first_valid_matching_profile_in_byte_order(tmp_path, data):
    profiles = tmp_path / "profiles"
    save_profile(profile_of(data), profiles / "a.json")
    save_profile(profile_of(data), profiles / "B.json")                         # "B" < "a" in byte order
    used, reason = find_profile(data / "f.h5", setting=str(profiles), env={})
    assert used == profiles / "B.json"
    assert reason.startswith(f"{profiles / 'B.json'}: the nearest in {profiles} (collective.profile)")
    (profiles / "B.json").write_text("{nope")                                     # invalid: skipped
    save_profile(profile_of(data, magic="0x1"), profiles / "0-other.json")        # another file system: skipped
    save_profile(profile_of(data), profiles / ".hidden.json")
    save_profile(profile_of(data), profiles / "0.txt")
    assert find_profile(data / "f.h5", setting=str(profiles), env={})[0] == profiles / "a.json"
    (profiles / "a.json").unlink()
    used, reason = find_profile(data / "f.h5", setting=str(profiles), env={})
    assert used is None
    assert reason.startswith(f"no profile in {profiles} (collective.profile) matches the file system of "
                             f"{data.resolve()}") and reason.endswith("2 profile file(s) there")


def test_a_directory_gives_the_profile_of_the_deepest_directory_above_the_file(tmp_path, data):
    """Two layouts of one file system calibrated each in its own directory: a file takes the nearer's profile, a
    file beside it the other's; a losing profile is listed with the reason."""
    profiles, striped, plain = tmp_path / "profiles", data / "l6", data / "def"
    striped.mkdir()
    plain.mkdir()
    save_profile(profile_of(data), profiles / "a-mount.json")
    save_profile(profile_of(striped, targets=6, stripe_unit=65536), profiles / "b-l6.json")
    save_profile(profile_of(tmp_path), profiles / "0-above.json")
    assert find_profile(striped / "f", setting=str(profiles), env={})[0] == profiles / "b-l6.json"
    assert find_profile(plain / "f", setting=str(profiles), env={})[0] == profiles / "a-mount.json"
    report = discovery_report(striped, setting=str(profiles), env={})
    assert [c["path"] for c in report["considered"]][-1] == str(profiles / "b-l6.json")
    assert (f"a profile of a directory nearer {striped.resolve()} applies: {profiles / 'b-l6.json'}"
            in {c["path"]: c["problem"] for c in report["considered"]}[str(profiles / "a-mount.json")])


def test_a_named_file_is_used_only_valid_and_matching_without_fallback(tmp_path, data, lib):
    good = save_profile(profile_of(data), tmp_path / "good.json")
    other = save_profile(profile_of(data, magic="0xbeef"), tmp_path / "other.json")
    xdg = tmp_path / "cfg"
    save_profile(profile_of(data), xdg / "iotame" / "profiles" / "any.json")     # would match, never reached
    env = {"XDG_CONFIG_HOME": str(xdg)}
    used, reason = find_profile(data / "f", setting=str(good), env=env, lib_path=lib)
    assert used == good and reason.startswith(f"{good}: named by collective.profile that matches")
    used, reason = find_profile(data / "f", setting=str(other), env=env, lib_path=lib)
    assert used is None
    assert reason.startswith(f"iotame: profile {other}: filesystem: expected the file system of {data.resolve()} "
                             f"(magic {fs_identity(data)['magic']}, device ")
    assert reason.endswith("got magic 0xbeef device " + fs_identity(data)["device"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(good_profile(), version=7)))
    assert find_profile(data / "f", env=dict(env, IOTAME_PROFILE=str(bad)), lib_path=lib) == (
        None, f"iotame: profile {bad}: version: expected the integer 1 or 2, got 7")
    used, reason = find_profile(data / "f", env=dict(env, IOTAME_PROFILE=str(tmp_path / "none.json")), lib_path=lib)
    assert used is None and reason.startswith(f"iotame: profile {tmp_path / 'none.json'}: cannot read")


def test_the_sources_in_order(tmp_path, data, lib):
    xdg, prefix_dir = tmp_path / "cfg" / "iotame" / "profiles", tmp_path / "build" / "share" / "iotame" / "profiles"
    setting, named = save_profile(profile_of(data), tmp_path / "s.json"), tmp_path / "env"
    save_profile(profile_of(data), named / "e.json")
    save_profile(profile_of(data), xdg / "x.json")
    save_profile(profile_of(data), prefix_dir / "a.json")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "IOTAME_PROFILE": str(named)}
    assert find_profile(data / "f", str(setting), env, lib)[0] == setting
    assert find_profile(data / "f", None, env, lib)[0] == named / "e.json"
    assert profile_sources(None, env, lib) == ([named], "IOTAME_PROFILE")
    del env["IOTAME_PROFILE"]
    assert find_profile(data / "f", None, env, lib)[0] == xdg / "x.json"
    (xdg / "x.json").unlink()
    used, reason = find_profile(data / "f", None, env, lib)
    assert used == prefix_dir / "a.json" and "(default directories)" in reason
    assert find_profile(data, None, env, lib)[0] == used                         # a directory: a file in it
    used, reason = find_profile(tmp_path / "none" / "f", None, env, lib)
    assert used is None and reason.startswith(f"cannot stat {tmp_path / 'none'}")


def test_default_profile_path_sanitizes_the_type(tmp_path):
    p = good_profile()
    p["filesystem"].update(type="ext2/ext3", device="254:1", targets=1, stripe_unit=0)
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert default_profile_path(p, env) == tmp_path / "iotame/profiles/ext2_ext3-254_1.json"
    p["filesystem"]["type"] = "UNKNOWN (0xbd00bd0)"
    assert default_profile_path(p, env).name == "UNKNOWN_0xbd00bd0-254_1.json"
    assert default_profile_path(p, {}) is None
    p["filesystem"].update(type="ceph", device="0:55", targets=6, stripe_unit=65536)
    assert default_profile_path(p, env).name == "ceph-0_55-6x64K.json"       # one file per layout
    p["filesystem"].update(targets=1, stripe_unit=4194304)
    assert default_profile_path(p, env).name == "ceph-0_55-1x4M.json"


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_calibrate_without_out_writes_where_the_runtime_finds_it(tmp_path, data, lib, monkeypatch, capsys):
    cfg = tmp_path / "cfg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    assert main(["calibrate", "--quick", "--dir", str(data)]) == 0
    (written,) = (cfg / "iotame" / "profiles").iterdir()
    assert f"profile in {written} (the runtime finds it there" in capsys.readouterr().err
    ident = fs_identity(data)
    assert written.name == default_profile_path({"filesystem": ident}, os.environ).name
    assert written.name.endswith(f"-{ident['device'].replace(':', '_')}.json")
    assert find_profile(data / "out.h5", env=os.environ, lib_path=lib)[0] == written


def test_info_says_which_profile_applies_in_a_directory(tmp_path, data, monkeypatch, capsys):
    cfg = tmp_path / "cfg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    monkeypatch.setenv("COLUMNS", "300")
    skipped = save_profile(profile_of(data, magic="0x1"), cfg / "iotame" / "profiles" / "a.json")
    used = save_profile(profile_of(data), cfg / "iotame" / "profiles" / "b.json")
    assert main(["info", "--json", "--dir", str(data)]) == 0
    found = json.loads(capsys.readouterr().out)["profile"]
    assert found["source"] == "default directories" and found["dir"] == str(data)
    assert found["searched"][0] == {"path": str(cfg / "iotame" / "profiles"), "exists": True}
    assert found["searched"][1]["path"].endswith("share/iotame/profiles")
    assert found["used"] == str(used) and "the nearest in" in found["reason"]
    assert [c["path"] for c in found["considered"]] == [str(skipped), str(used)]
    assert "got magic 0x1 " in found["considered"][0]["problem"] and found["considered"][1]["problem"] is None
    assert main(["info", "--dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert str(used) in out and "got magic 0x1 " in out
    monkeypatch.chdir(data)
    monkeypatch.setenv("IOTAME_PROFILE", str(skipped))
    assert main(["info", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["profile"]
    assert found["dir"] == str(data) and found["source"] == "IOTAME_PROFILE" and found["used"] is None
    assert found["reason"].startswith(f"iotame: profile {skipped}: filesystem: expected")
    assert main(["info", "--dir", str(tmp_path / "none")]) == 2
