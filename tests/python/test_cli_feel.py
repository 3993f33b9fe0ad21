"""The command line as a tool: quick commands import no heavy library, and Ctrl-C ends with exit 130 and one line,
no traceback (issue 50, item 5). The times themselves are measured by hand, not asserted."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HEAVY = ("matplotlib", "darshan", "optuna", "numpy", "pandas", "scipy")

_PROBE = """
import contextlib, io, json, sys
from iotame.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "heavy": sorted(m for m in sys.modules if m.split(".")[0] in %r)}))
""" % (HEAVY,)


def _imports(*argv: str) -> dict:
    p = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["--version"], ["info"], ["info", "--json"]])
def test_quick_commands_import_no_heavy_library(argv):
    got = _imports(*argv)
    assert got["rc"] == 0
    assert got["heavy"] == []


def test_help_still_lists_every_command():
    p = subprocess.run([sys.executable, "-m", "iotame", "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0
    for name in ("info", "config", "run", "stats", "bench", "tune", "report", "calibrate", "advise", "replay"):
        assert f"    {name}" in p.stdout


def test_ctrl_c_ends_with_130_and_no_traceback(tmp_path, fake_lib):
    """SIGINT to the process group (what a terminal's Ctrl-C does) while `iotame run` waits for its job."""
    # as from a terminal: SIGINT not ignored (a test run started in the background inherits SIG_IGN, and Python
    # then installs no KeyboardInterrupt handler)
    p = subprocess.Popen([sys.executable, "-m", "iotame", "run", "-q", "--", "sleep", "30"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _has_child(p.pid, "sleep"):
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert "iotame: interrupted" in err


def _has_child(pid: int, name: str) -> bool:
    """Whether the process has a child that runs `name` (exec'd: a child still forking, or a short helper such as
    pkg-config, is not the job, and a signal sent then is not the Ctrl-C this test means)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
    except OSError:
        return False
    for c in children:
        try:
            if Path(f"/proc/{c}/comm").read_text().strip() == name:
                return True
        except OSError:
            pass
    return False


def test_a_piped_table_fits_80_columns_and_cuts_no_word(monkeypatch):
    """A table with many columns, printed to a file, wraps its cells at spaces within 80 columns; no `…`, no word
    broken."""
    import io

    from rich.table import Table

    from iotame.render import console
    monkeypatch.delenv("COLUMNS", raising=False)
    t = Table()
    for col in ("path", "call", "strategy", "calls", "MB/s per candidate"):
        t.add_column(col)
    t.add_row("/tmp/x.dat", "write 1,048,576 B in 64 pieces, gap 4096", "independent", "21",
              "two_phase 812.5 node_local 1,020.7 independent 18,133.4")
    buf = io.StringIO()
    console(file=buf).print(t)
    out = buf.getvalue()
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    for word in ("1,048,576", "independent", "18,133.4", "/tmp/x.dat", "node_local"):
        assert word in out, word


def test_a_status_on_a_pipe_is_a_line_per_step(capsys):
    """What a long command does reaches a log: once it has run longer than the delay, each step of
    iotame.render.status is a line on stderr; a quick command prints nothing."""
    from iotame.render import status
    with status("quick", after=100, every=100) as s:
        s.update("quick: a step")
    assert capsys.readouterr().err == ""
    with status("calibrate", after=0.05, every=100) as s:
        time.sleep(0.5)
        s.update("calibrate: memory")
        s.update("calibrate: storage, 4 streams")
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in err] == ["iotame: calibrate", "iotame: calibrate: memory",
                                                     "iotame: calibrate: storage, 4 streams"]


def test_a_long_step_on_a_pipe_is_repeated(capsys):
    """A step that runs for minutes shows again and again, not once."""
    from iotame.render import status
    with status("calibrate: strategies", after=0.05, every=0.1):
        time.sleep(0.6)
    err = capsys.readouterr().err.splitlines()
    assert len(err) >= 3 and all(line.startswith("iotame: calibrate: strategies (") for line in err)


def test_a_reader_that_goes_away_leaves_no_traceback(tmp_path):
    """`iotame stats show s.json --json | head -1`: the pipe closes under the command; it ends with 141 and says
    nothing."""
    from .fakes import make_stats
    stats = tmp_path / "s.json"
    stats.write_text(json.dumps(make_stats()))
    p = subprocess.Popen([sys.executable, "-m", "iotame", "stats", "show", str(stats), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_consoles_status_on_a_pipe_is_lines_too(capsys):
    """console(stderr=True).status(...) (what calibrate uses) prints lines where rich's spinner would print
    nothing."""
    from iotame.render import console
    with console(stderr=True).status("calibrate") as s:
        s.update("calibrate: memory")
        time.sleep(2.5)
    assert capsys.readouterr().err.startswith("iotame: calibrate: memory (")
