"""`iotame report PROFILE.json` (issue 50, item 4: calibrate's curves as a figure): the page of a machine profile,
rendered by headless Chromium (tests/browser.py): its sections, its figures decoded, the strategies' table and the
fit's error as the profile holds them, no horizontal overflow; a bad profile is refused by key."""
import copy
import json

from browser import probe
from iotame.calibrate import save_profile
from iotame.cli import main

from .profiles import MIB, good_profile

_COLLECT = """var all = function (q) { return Array.prototype.slice.call(d.querySelectorAll(q)); };
  return {h2: all('h2').map(function (h) { return h.textContent; }),
          imgs: all('img').map(function (i) { return i.naturalWidth; }),
          cells: all('td').map(function (c) { return c.textContent; })};"""


def _row(strategy, op, seconds):
    return {"op": op, "strategy": strategy, "nprocs": 2, "nodes": 1, "ppn": 2, "piece": 64, "pieces": 16384,
            "interleaved": True, "calls": 8, "bytes": 2 * MIB, "gap": 0, "targets": 1, "unit": 0, "sieves": 1,
            "open_seconds": 0.001, "seconds": seconds}


def test_the_profile_page_in_chromium(tmp_path, capsys):
    p = dict(good_profile(), version=2)
    p["strategies"] = {"method": "m", "seconds": 1.0,
                       "measured": [_row("two_phase", "write", [0.02, 0.021, 0.019]),
                                    _row("view_based", "write", [0.01]), _row("two_phase", "read", [0.004])]}
    path = save_profile(p, tmp_path / "ext4.json")
    assert main(["report", str(path)]) == 0
    page = tmp_path / "ext4.html"
    assert capsys.readouterr().out.strip() == str(page)
    got = probe(page, _COLLECT)
    assert got["title"] == "iotame profile: ext4.json"
    # no network measured (one node, no probe): the storage curves and the strategies
    assert got["h2"] == ["Storage", "Collective strategies: MB/s of the median call"]
    assert len(got["imgs"]) == 1 and got["imgs"][0] > 100                     # the storage curves decoded
    # the signature's row: MB/s of the median call, 2 MiB / 0.02 s for two_phase and / 0.01 s for view_based
    row = got["cells"].index("write 16,384 x 64 B interleaved, 8 calls")
    assert got["cells"][row + 1:row + 3] == [f"{2 * MIB / 0.02 / 1e6:,.1f}", f"{2 * MIB / 0.01 / 1e6:,.1f}"]
    storage = p["storage"]["write"]["sequential"][0]
    assert f"{storage[1]:,.1f}" in got["cells"]
    assert got["overflow"] is False


def test_a_bad_profile_is_refused_by_key(tmp_path, capsys):
    p = copy.deepcopy(good_profile())
    p["storage"]["write"]["sequential"][0] = [4096, -1]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(p))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"iotame: profile {path}: storage.write.sequential[0]: expected [request bytes > 0, MB/s > 0]" in err
    assert not (tmp_path / "bad.html").exists()
