"""One definition of a run's bandwidth (iotame.bandwidth), and that `iotame run`/`stats show` and the tuner's
objective give the same figure for one statistics file."""
import io
import json

import pytest
from rich.console import Console

from iotame.bandwidth import DEFINITION, MIB, bandwidth, fmt_bandwidth, run_bandwidth
from iotame.render import print_stats
from iotame.stats import objective, summarize

from .fakes import make_stats


def test_bytes_over_io_seconds_in_mb_and_mib():
    bw = bandwidth(8_000_000, 2.0)
    assert bw.mb_s == 4.0 and bw.mib_s == pytest.approx(8_000_000 / 2.0 / MIB)
    assert bandwidth(10, 0).mb_s == 0.0
    assert fmt_bandwidth(bw) == "4.0 MB/s (3.8 MiB/s)" and fmt_bandwidth(1234.5, mib=False) == "1,234.5 MB/s"
    assert "10^6" in DEFINITION and "open/close" in DEFINITION


def test_a_missing_key_is_named():
    with pytest.raises(KeyError, match="io_seconds"):
        run_bandwidth({"summary": {"bytes_read": 1, "bytes_written": 2}})


def test_run_stats_show_and_the_tuner_agree():
    stats = make_stats(bytes_written=3_000_000, bytes_read=1_000_000, io_seconds=2.0)
    stats["summary"]["io_mbs"] = 999.0          # a stale figure in the file: the definition wins
    want = run_bandwidth(stats).mb_s
    assert want == 2.0
    assert objective(stats, "io-bandwidth") == want and summarize(stats)["summary"]["io_mbs"] == want
    buf = io.StringIO()
    print_stats(summarize(stats), Console(file=buf, width=200))
    text = buf.getvalue()
    assert "bandwidth: 2.0 MB/s (1.9 MiB/s)" in text and "999" not in text
