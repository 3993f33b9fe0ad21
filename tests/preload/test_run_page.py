"""`iotame report STATS.json` on a real run (issue 50, item 4): IOR through MPI-IO collective calls under the
runtime with strategy auto, throttle auto and staging; the page rendered by headless Chromium (tests/browser.py): its sections, its figures decoded and laid out, the decisions the
statistics hold, no horizontal overflow. A screenshot goes to IOTAME_SCREENSHOT (when set) for a person to look at."""
import json
import os

from browser import chromium, probe
from conftest import KERNEL, write_json
from iotame.cli import main

CONFIG = {"version": 1, "defaults": {"collective": {"strategy": "auto"},
                                     "throttle": {"readers": "auto", "writers": "auto"},
                                     "staging": {"enabled": True}}}

# What the run page's probe collects: its sections, its figures' widths and its table cells.
_COLLECT = """var all = function (q) { return Array.prototype.slice.call(d.querySelectorAll(q)); };
  return {h2: all('h2').map(function (h) { return h.textContent; }),
          imgs: all('img').map(function (i) { return i.naturalWidth; }),
          cells: all('td').map(function (c) { return c.textContent; })};"""


def _run_and_render(job, capsys, config):
    """The IOR job under `config`, its page, and what Chromium made of the page."""
    config = write_json(job.tmp / "c.json", config)
    stats = job.tmp / "s.json"
    res, p = job.kernel(2, "ior", "-a", "MPIIO", "-c", "-w", "-r", "-b", "4m", "-t", "256k", "-s", "4",
                        "-o", str(job.tmp / "ior.dat"), preload=True, config=config, stats=stats)
    assert res is not None and not res["errors"], p.stderr
    st = json.loads(stats.read_text())
    assert st["modules"].get("throttle") and st["modules"].get("stage")
    assert any(f.get("decisions") for f in st["files"])

    assert main(["report", str(stats)]) == 0
    page = job.tmp / "s.html"
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    assert "<script" not in text and "src='data:image/png;base64," in text     # one file: figures inline

    got = probe(page, _COLLECT)
    assert got["title"] == "iotame run: s.json"
    assert got["h2"] == ["What the runtime decided, and why", "Files"]
    assert all(w > 100 for w in got["imgs"])                                   # every figure decoded
    modules = {c for c in got["cells"] if c in ("selector", "throttle", "staging")}
    assert modules == {"selector", "throttle", "staging"}
    assert any(c.startswith(("examining:", "decided:")) for c in got["cells"])
    assert "MPI-IO" in got["cells"] and "POSIX" in got["cells"]
    assert got["overflow"] is False

    shot = os.environ.get("IOTAME_SCREENSHOT")
    if shot:
        chromium(f"--screenshot={shot}", page.as_uri())
        assert os.path.getsize(shot) > 0
    return st, got


def test_the_run_page_of_auto_throttle_and_staging_in_chromium(job, capsys):
    """A short job: the throttle's windows (0.25 s) are longer than its I/O, so the page says why it never
    decided; histograms and time per rank for the file."""
    st, got = _run_and_render(job, capsys, CONFIG)
    assert any(c.startswith("not decided: the job's I/O") for c in got["cells"]), got["cells"]
    assert len(got["imgs"]) == 2


def test_the_run_page_shows_the_throttles_level_over_time(job, capsys):
    """Windows short enough for this job: the throttle searches, and the page names the level found and draws
    its level over time."""
    config = json.loads(json.dumps(CONFIG))
    config["defaults"]["throttle"]["window_seconds"] = 0.0005
    st, got = _run_and_render(job, capsys, config)
    searched = [t for t in st["modules"]["throttle"]["targets"] if (t.get("read") or {}).get("phases")]
    assert searched, st["modules"]["throttle"]
    assert any(c.startswith(("found level", "searching")) for c in got["cells"]), got["cells"]
    assert len(got["imgs"]) == 3                                               # and the level over time
