"""Workloads from statistics, their signatures, pruning, and the knowledge base."""
import pytest

from iotame.tune import KnowledgeBase, builtin_space, default_knowledge_path, prune, signature, similar, \
    workload_from_stats
from iotame.tune.workload import size_bucket

from .fakes import make_stats


@pytest.fixture(autouse=True)
def knowledge_env(tmp_path, monkeypatch):
    monkeypatch.setenv("IOTAME_KNOWLEDGE", str(tmp_path / "kb.sqlite"))


def test_workload_from_stats():
    w = workload_from_stats(make_stats(bytes_written=2097152, bytes_read=1048576))
    assert (w.nprocs, w.bytes_written, w.bytes_read, w.files) == (2, 2097152, 1048576, 1)
    assert (w.write_ops, w.read_ops, w.collective_ops, w.independent_ops) == (4, 3, 4, 3)
    assert w.write_size == 524288 and w.read_size is None     # the fake has no read histogram
    assert w.collective_fraction == pytest.approx(4 / 7)


def test_signature_buckets():
    assert [size_bucket(n) for n in (0, 1, 4095, 4096, 8191)] == [0, 1, 2048, 4096, 4096]
    sig = signature(workload_from_stats(make_stats(bytes_written=3 << 20, bytes_read=0)), "local")
    assert sig == {"nprocs": 2, "fs": "local", "read_bytes": 0, "write_bytes": 2 << 20, "read_size": None,
                   "write_size": 524288, "collective": 0.6, "files": 1}


def test_similar_rule():
    a = signature(workload_from_stats(make_stats(bytes_written=3 << 20)), "local")
    assert similar(a, dict(a, write_bytes=a["write_bytes"], collective=0.1, files=4))   # counts differ: similar
    for key, other in [("nprocs", 4), ("fs", "lustre"), ("write_bytes", 4 << 20), ("read_bytes", 0),
                       ("write_size", 1 << 20), ("read_size", 4096)]:
        assert not similar(a, dict(a, **{key: other})), key


def test_prune_by_workload():
    space = builtin_space("lustre", 2)
    stats = make_stats(bytes_read=0)
    stats["files"][0]["ops"] = {"write_at": {"count": 4, "bytes": 2097152}}          # independent writes only
    pruned = prune(space, workload_from_stats(stats))
    assert pruned.keys() == ["mpiio.romio_ds_write", "mpiio.ind_wr_buffer_size", "striping.striping_factor",
                             "striping.striping_unit", "iotame.throttle.writers", "iotame.staging.enabled",
                             "iotame.staging.cache_mb", "iotame.staging.flush_threshold", "iotame.staging.flush_delay_ms",
                             "iotame.memory.malloc_threshold"]
    assert ("romio_cb_read, romio_ds_read, ind_rd_buffer_size, readers, prefetch left out: the workload makes no reads"
            in pruned.notes)
    full = prune(space, workload_from_stats(make_stats())).keys()          # reads, writes, collective: no HDF5
    assert full == [k for k in space.keys() if not k.startswith("hdf5.")]
    h5 = make_stats()
    h5["files"][0]["hdf5"] = {}
    h5["modules"] = {"hdf5": {"same_on_every_rank": True}}
    assert prune(space, workload_from_stats(h5)).keys() == space.keys()
    nothing = make_stats()
    nothing["files"] = []
    assert prune(space, workload_from_stats(nothing)) == space


def test_knowledge_base_record_and_lookup(tmp_path):
    assert default_knowledge_path() == tmp_path / "kb.sqlite"
    kb = KnowledgeBase(default_knowledge_path())
    sig = signature(workload_from_stats(make_stats()), "local")
    assert kb.lookup(sig) == []
    good = {"version": 1, "defaults": {"mpiio_hints": {"romio_cb_write": "disable"}}}
    better = {"version": 1, "defaults": {"mpiio_hints": {"romio_cb_write": "disable", "cb_nodes": 1}}}
    kb.record(sig, good, study="a", objective="io-bandwidth", command=["x"], default_value=10, best_value=20,
              speedup=2.0)
    kb.record(sig, better, study="b", objective="io-bandwidth", command=["x"], default_value=10, best_value=30,
              speedup=3.0)
    kb.record(sig, {"version": 1}, study="c", objective="io-bandwidth", command=["x"], default_value=10,
              best_value=10, speedup=1.0)                                   # no gain: never proposed
    kb.record(dict(sig, nprocs=4), better, study="d", objective="io-bandwidth", command=["x"], default_value=1,
              best_value=9, speedup=9.0)                                    # not similar
    kb.record(dict(sig, files=3), good, study="e", objective="io-bandwidth", command=["x"], default_value=1,
              best_value=9, speedup=9.0)                                    # similar but farther, same config as a
    found = kb.lookup(sig)
    assert [k.study for k in found] == ["b", "a"]
    assert found[0].config == better
    assert [k.study for k in kb.lookup(sig, exclude_study="b")] == ["a"]
    kb.record(sig, good, study="b", objective="io-bandwidth", command=["x"], default_value=10, best_value=20,
              speedup=2.0)                                                  # study b again: replaces its entry
    assert [k.study for k in kb.lookup(sig)] == ["b"]            # one config once: the newest of equals


def test_prune_collective_strategies_without_collective_calls():
    from iotame.tune import Param, Space
    space = Space((Param("iotame", "collective", "strategy", ("two_phase",)),
                   Param("iotame", "throttle", "streams", (1, 2))))
    stats = make_stats()
    stats["files"][0]["ops"] = {"write_at": {"count": 4, "bytes": 2097152}}
    assert prune(space, workload_from_stats(stats)).keys() == ["iotame.throttle.streams"]
    assert prune(space, workload_from_stats(make_stats())).keys() == space.keys()


def test_hdf5_collective_transfer_keeps_collective_hints():
    from iotame.tune import Param, Space
    space = Space((Param("mpiio", "mpiio_hints", "cb_nodes", (1, 2)),
                   Param("hdf5", "hdf5", "transfer", ("collective", "independent"))))
    stats = make_stats()
    stats["files"][0]["ops"] = {"write_at": {"count": 4, "bytes": 2097152}}
    stats["files"][0]["hdf5"] = {"driver": "mpio", "applied": {}}
    stats["modules"] = {"hdf5": {"same_on_every_rank": True}}
    kept = prune(space, workload_from_stats(stats))
    assert kept.keys() == space.keys() and "transfer kept: every rank made the same HDF5 calls" in kept.notes
    assert prune(space.without(["hdf5.transfer"]), workload_from_stats(stats)).keys() == []


@pytest.mark.parametrize("same,why", [(False, "the ranks made different HDF5 calls"),
                                      (None, "the statistics do not say whether every rank made the same HDF5 calls")])
def test_hdf5_collective_settings_need_the_same_calls_on_every_rank(same, why):
    """Collective transfer and metadata hang a job whose ranks make different HDF5 calls: out of the space unless the
    default run showed every rank making the same ones (and the collective hints they would bring in go too)."""
    from iotame.tune import Param, Space
    space = Space((Param("mpiio", "mpiio_hints", "cb_nodes", (1, 2)),
                   Param("hdf5", "hdf5", "transfer", ("collective", "independent")),
                   Param("hdf5", "hdf5", "coll_metadata_writes", (True, False)),
                   Param("hdf5", "hdf5", "chunk_bytes", (1048576,))))
    stats = make_stats()
    stats["files"][0]["ops"] = {"write_at": {"count": 4, "bytes": 2097152}}
    stats["files"][0]["hdf5"] = {"driver": "mpio", "applied": {}}
    if same is not None:
        stats["modules"] = {"hdf5": {"H5Dwrite": {"min": 1, "max": 3}, "same_on_every_rank": same}}
    pruned = prune(space, workload_from_stats(stats))
    assert pruned.keys() == ["hdf5.chunk_bytes"]
    assert f"transfer, coll_metadata_writes left out: {why} (collective transfer or metadata could hang the job)" \
        in pruned.notes
