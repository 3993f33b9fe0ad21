"""The label of runs made on the emulated storage device (the runtime's modules.emulate) in bench and tune output."""
import json

from iotame.commands.tune import _storage_label
from iotame.stats import emulated_storage

from .fakes import make_stats

DISK = {"device": "disk", "servers": 1, "bandwidth_mbs": 60.0, "position_ms": 4.2, "seek_ms": 8.0, "span_mb": 4096.0,
        "streams": 1, "write_behind": True, "state": "/dev/shm/x", "requests": 10}


def test_label_names_the_device_and_its_parameters():
    stats = make_stats()
    assert emulated_storage(stats) is None
    assert emulated_storage(None) is None
    stats["modules"] = {"throttle": {}}
    assert emulated_storage(stats) is None
    stats["modules"]["emulate"] = DISK
    label = emulated_storage(stats)
    assert label.startswith("storage: EMULATED disk (servers 1, 60 MB/s each, positioning 4.2 ms + seek up to 8 ms")
    assert "1 prefetched stream," in label and "write-behind on; 10 requests modelled)" in label
    assert "experiments only" in label
    stats["modules"]["emulate"] = dict(DISK, targets=6, target_unit=65536)
    assert emulated_storage(stats).startswith("storage: EMULATED disk (6 targets striped in 64 KiB units, each servers 1,")


def test_tune_reads_the_label_from_a_trial(tmp_path):
    assert _storage_label(tmp_path) is None
    run = tmp_path / "trials" / "0000" / "run-1"
    run.mkdir(parents=True)
    (run / "stats.json").write_text("{not json")
    assert _storage_label(tmp_path) is None
    stats = make_stats()
    stats["modules"] = {"emulate": dict(DISK, device="raid5", servers=5, streams=8)}
    run = tmp_path / "trials" / "0001" / "run-1"
    run.mkdir(parents=True)
    (run / "stats.json").write_text(json.dumps(stats))
    assert _storage_label(tmp_path).startswith("storage: EMULATED raid5 (servers 5,")
