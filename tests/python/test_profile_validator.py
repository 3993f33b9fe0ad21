"""The runtime's validator of machine profiles (`iotame-config profile`, runtime/src/profile/load.c) on what
`iotame calibrate` writes: a fresh quick calibration is valid; a broken profile is refused with one line per problem
naming the file and the key (exit status 1); Python's load_profile and validate_profile refuse it with the runtime's
lines (they run the runtime's validator: there is no second one to disagree)."""
import json
import subprocess

import pytest

from iotame.calibrate import ProfileError, load_profile, validate_profile
from iotame.cli import main
from iotame.paths import config_tool_path

from .profiles import set_key


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A profile of a quick calibration on a temporary directory (fio), as `iotame calibrate` writes it."""
    tmp = tmp_path_factory.mktemp("calibrate")
    (tmp / "data").mkdir()
    out = tmp / "p.json"
    assert main(["calibrate", "--quick", "--dir", str(tmp / "data"), "--out", str(out)]) == 0
    return out


def run_tool(*paths):
    return subprocess.run([str(config_tool_path()), "profile", *map(str, paths)], capture_output=True, text=True)


def test_a_calibrated_profile_is_valid(calibrated):
    p = run_tool(calibrated)
    assert (p.returncode, p.stdout, p.stderr) == (0, f"{calibrated}: ok\n", "")


def test_a_broken_profile_is_refused_with_the_file_and_every_key(calibrated, tmp_path):
    profile = json.loads(calibrated.read_text())
    del profile["memory"]["copy_mbs"]
    profile["storage"]["write"]["sequential"][1][1] = -5.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(profile))
    p = run_tool(calibrated, bad)
    assert p.returncode == 1
    assert p.stdout == f"{calibrated}: ok\n"
    assert p.stderr.splitlines() == [
        f"iotame: profile {bad}: storage.write.sequential[1]: expected [request bytes > 0, MB/s > 0], got array",
        f"iotame: profile {bad}: memory.copy_mbs: expected a number > 0 (MB/s), missing"]


def test_unreadable_and_usage(tmp_path):
    missing = tmp_path / "none.json"
    p = run_tool(missing)
    assert p.returncode == 1 and p.stderr.startswith(f"iotame: profile {missing}: cannot read: ")
    assert subprocess.run([str(config_tool_path()), "profile"], capture_output=True).returncode == 2


def _broken(profile, keys, value):
    set_key(profile, keys, value)
    return profile


@pytest.mark.parametrize("keys, value", [
    (("kind",), "iotame-config"),
    (("version",), 3),
    (("filesystem", "device"), "254"),
    (("filesystem", "targets"), "6"),
    (("nodes", "count"), 0),
    (("storage", "read", "scattered"), []),
    (("storage", "streams"), KeyError),
    (("storage", "reads_from"), "disk"),
    (("storage", "write_back", "absorbed_bytes"), -1),
    (("network",), []),
    (("filesystem", "magic"), "ef53"),
    (("memory", "copy_mbs"), KeyError),
    (("storage", "write", "sequential", 1, 0), 1),
    (("storage", "read", "scattered", 1, 1), -3.0),
    (("storage", "write_back", "absorbed_mbs"), "x"),
])
def test_python_refuses_with_the_runtimes_lines(calibrated, tmp_path, keys, value):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_broken(json.loads(calibrated.read_text()), keys, value)))
    with pytest.raises(ProfileError) as e:
        load_profile(bad)
    p = run_tool(bad)
    assert p.returncode == 1
    assert p.stderr.splitlines() == list(e.value.errors)
    problems = validate_profile(_broken(json.loads(calibrated.read_text()), keys, value))
    assert [f"iotame: profile {bad}: {line}" for line in problems] == list(e.value.errors)


def test_what_only_the_runtime_checks_is_refused_in_python(calibrated, tmp_path):
    """A key given twice: Python's json module keeps the last, the runtime's reader refuses the file; load_profile
    refuses it as the runtime does."""
    text = calibrated.read_text()
    twice = tmp_path / "twice.json"
    twice.write_text(text.replace('"memory": {', '"memory": {"copy_mbs": 1.0},\n "memory": {', 1))
    assert json.loads(twice.read_text())["memory"] == json.loads(text)["memory"]
    with pytest.raises(ProfileError) as e:
        load_profile(twice)
    p = run_tool(twice)
    assert p.returncode == 1 and "duplicate" in p.stderr
    assert list(e.value.errors) == p.stderr.splitlines()
