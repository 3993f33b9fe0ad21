"""What a person reads from `iotame advise`: the terminal output within 80 columns and nothing cut when piped, the
whole values in --json, and the --html page rendered by a real browser (Chromium, headless, installed by
scripts/setup.sh): its sections, its figures laid out with a bar per file group and per size bin, no horizontal
overflow."""
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.table import Table

from browser import probe
from iotame.advise.render import WIDTH
from iotame.cli import main
from iotame.render import console

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "darshan-logs"
E3SM = SHARED / "e3sm_io_heatmaps_and_dxt__e3sm_io_heatmap_only.darshan"
BIG_READ = SHARED / "pytokio__sample-2.darshan"
IMBALANCED = SHARED / "imbalanced_io__imbalanced-io.darshan"


@pytest.fixture(autouse=True)
def no_profile_found(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def test_a_console_that_is_not_a_terminal_cuts_no_value():
    """iotame.render.console on a file: a table with a long value keeps it whole (rich's default would cut it to
    80 columns with an ellipsis)."""
    buf = io.StringIO()
    t = Table()
    for col in ("path", "bytes read", "bytes written", "seconds"):
        t.add_column(col)
    long_path = "/lus/theta-fs0/projects/" + "x" * 120 + "/file.h5"
    t.add_row(long_path, "1,649,291,067,392", "2,199,023,259,968", "143,092.53")
    console(file=buf).print(t)
    out = buf.getvalue()
    assert long_path in out and "1,649,291,067,392" in out and "2,199,023,259,968" in out and "…" not in out


@pytest.mark.parametrize("log", [E3SM, IMBALANCED], ids=lambda p: p.name[:20])
def test_advise_piped_fits_80_columns_and_cuts_nothing(log):
    p = subprocess.run([sys.executable, "-m", "iotame.cli", "advise", str(log)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "…" not in p.stdout
    # a line is within WIDTH unless it holds a path, which is never broken
    wide = [ln for ln in lines if cell_len(ln) > WIDTH and not any("/" in w for w in ln.split())]
    assert not wide, wide[:3]
    assert WIDTH == 80
    # each finding is a panel that names it and states its figure against its threshold
    advice = json.loads(subprocess.run([sys.executable, "-m", "iotame.cli", "advise", str(log), "--json"],
                                       capture_output=True, text=True, timeout=300, cwd=ROOT).stdout)
    for f in advice["findings"]:
        assert f" {f['id']} · {f['severity']} · " in p.stdout
        assert f"{f['quantity']}: " in p.stdout and "(threshold " in p.stdout


def test_json_holds_the_whole_values(capsys):
    assert main(["advise", str(BIG_READ), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    import darshan
    r = darshan.DarshanReport(str(BIG_READ), read_all=False)
    r.mod_read_all_records("POSIX")
    c = dict(zip(r.counters["POSIX"]["counters"], r.records["POSIX"][0]["counters"]))
    assert a["job"]["bytes_read"] == c["POSIX_BYTES_READ"] == a["files"][0]["bytes_read"]   # 1,649,291,067,392


# What the advice page's probe collects: the sections, the bars and their widths, the findings.
_COLLECT = """var bars = Array.prototype.map.call(d.querySelectorAll('svg.chart rect.bar'),
                                      function (r) { return r.getBoundingClientRect().width; });
  return {sections: Array.prototype.map.call(d.querySelectorAll('h2'), function (h) { return h.id; }),
          charts: d.querySelectorAll('svg.chart').length, bars: bars,
          findings: d.querySelectorAll('div.finding').length};"""


def test_the_html_page_in_chromium(tmp_path, capsys):
    page = tmp_path / "advice.html"
    assert main(["advise", str(E3SM), "--html", str(page)]) == 0
    capsys.readouterr()
    assert main(["advise", str(E3SM), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    text = page.read_text()
    assert "<script" not in text and "src=" not in text          # self-contained: nothing loaded from beside it
    got = probe(page, _COLLECT, height=1000)
    assert got["sections"] == ["job", "figures", "files", "findings", "configuration"]
    assert got["title"] == f"iotame advise: {E3SM}"
    groups = a["files"]
    directions = [d for d, bins in a["job"]["histogram"].items() if bins]
    assert got["charts"] == 2 + len(directions)          # bytes and time per group, a histogram per direction
    assert len(got["bars"]) == 2 * len(groups) + 10 * len(directions)
    # bytes per group: the largest group's bar is the longest, and every group that moved bytes has a visible bar
    byte_bars = got["bars"][:len(groups)]
    moved = [g["bytes_read"] + g["bytes_written"] for g in groups]
    assert byte_bars.index(max(byte_bars)) == moved.index(max(moved))
    assert all(w >= 1 for w, m in zip(byte_bars, moved) if m)
    assert got["findings"] == len(a["findings"]) > 0
    assert got["overflow"] is False
