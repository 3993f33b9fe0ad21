"""The runtime's validator of machine profiles (`iotame-config profile`, runtime/src/profile/load.c) on what
`iotame calibrate` writes: a fresh quick calibration is valid; a broken profile is refused with one line per problem
naming the file and the key (exit status 1), and the lines are the ones the Python validator prints."""
import json
import subprocess

import pytest

from iotame.calibrate import ProfileError, load_profile
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
    (("version",), 2),
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
def test_the_same_lines_as_the_python_validator(calibrated, tmp_path, keys, value):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_broken(json.loads(calibrated.read_text()), keys, value)))
    with pytest.raises(ProfileError) as e:
        load_profile(bad)
    p = run_tool(bad)
    assert p.returncode == 1
    assert p.stderr.splitlines() == list(e.value.errors)
