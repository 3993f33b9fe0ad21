"""The runtime on a real CephFS (scripts/ceph/up: one host, one BlueStore OSD on a tmpfs, ceph-fuse): the file's
layout as the POSIX layer reads it (`storage_targets` from "cephfs") and the striping hints, which ROMIO ignores
there, set as a new file's layout at its creation (runtime/src/posix/cephfs_hints.c)."""
import json
import os
import random
import shutil
import subprocess

import pytest

from conftest import KERNEL, ROOT, TEST_PROGRAMS, file_stats, write_json

CEPH_BINARIES = ("ceph-mon", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph")
PRINT_HINTS = TEST_PROGRAMS / "print_hints"
DEFAULT = {"stripe_unit": 4194304, "stripe_count": 1, "object_size": 4194304}
IOR = ["ior", "-a", "MPIIO", "-c", "-b", "1m", "-t", "256k", "-k", "-w", "-W"]  # 2 MiB over 2 ranks, kept

missing = [b for b in CEPH_BINARIES if shutil.which(b) is None]
pytestmark = [
    pytest.mark.skipif(bool(missing), reason=f"the ceph packages are missing ({', '.join(missing)} not found): "
                                             "`make setup` installs them"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a CephFS needs root (its daemons, the ceph-fuse mount)"),
]


@pytest.fixture(scope="module")
def cephfs(tmp_path_factory):
    """A one-host CephFS mounted for the module, on a loopback address of its own (another cluster may run on
    127.0.0.1 or in network namespaces at the same time); always taken down, the OSD's tmpfs with it."""
    base = tmp_path_factory.mktemp("cephfs")
    cluster, mount = base / "cluster", base / "mnt"
    ip = f"127.0.0.{random.randint(20, 250)}"
    try:
        subprocess.run([ROOT / "scripts/ceph/up", cluster, mount, "--osds", "1", "--no-mgr", "--osd-bytes",
                        str(1 << 30), "--osd-store", "bluestore", "--ip", ip],
                       check=True, capture_output=True, text=True, timeout=180)
        yield mount
    finally:
        subprocess.run([ROOT / "scripts/ceph/down", cluster], capture_output=True, timeout=120)
        assert not os.path.ismount(cluster / "blocks"), "scripts/ceph/down left the OSDs' tmpfs mounted"


def layout(path):
    """The file's CephFS layout, as `getfattr -n ceph.file.layout` shows it."""
    text = os.getxattr(path, "ceph.file.layout").decode()
    fields = dict(word.split("=", 1) for word in text.split())
    return {k: int(fields[k]) for k in DEFAULT}


def hints_config(job, factor, unit, **collective):
    rule = {"match": "*", "collective": collective} if collective else None
    return write_json(job.tmp / "c.json", {"version": 1, "defaults": {"mpiio_hints": {
        "striping_factor": factor, "striping_unit": unit}}, "files": [rule] if rule else []})


def test_configured_hints_give_a_new_file_their_layout_and_the_librarys_bytes(job, cephfs):
    """(a) A file an MPI job creates with striping_factor 6 and striping_unit 64 KiB in the configuration has exactly
    that layout (ROMIO alone leaves CephFS's default), and the same bytes as the job's file without the runtime."""
    ours, ref, stats = cephfs / "hinted.dat", cephfs / "hinted.ref", job.tmp / "s.json"
    res, _ = job.kernel(2, *IOR, "-o", ours, preload=True, config=hints_config(job, 6, 65536), stats=stats)
    assert res["verified"]
    assert layout(ours) == {"stripe_unit": 65536, "stripe_count": 6, "object_size": 4194304}
    res, _ = job.kernel(2, *IOR, "-o", ref)
    assert res["verified"] and layout(ref) == DEFAULT
    assert ours.read_bytes() == ref.read_bytes() and ours.stat().st_size == 2 << 20
    f = file_stats(stats, "hinted.dat")
    assert f["posix"]["storage_layout"] == {"stripe_unit": 65536, "stripe_count": 6, "object_size": 4194304,
                                            "from": "hints"}
    assert f["passthrough_reasons"] == {}


def test_an_hdf5_file_gets_the_layout_too(job, cephfs):
    """H5Fcreate through HDF5's MPI-IO driver opens the file with MPI_File_open: the hints set its layout too."""
    path, stats = cephfs / "vpic.h5", job.tmp / "s.json"
    res, _ = job.kernel(2, "vpicio", "--file", path, "--keep", "--collective", preload=True,
                        config=hints_config(job, 6, 65536), stats=stats)
    assert res["verified"]
    assert layout(path) == {"stripe_unit": 65536, "stripe_count": 6, "object_size": 4194304}


def test_storage_targets_come_from_the_cephfs_layout(job, cephfs):
    """(b) target_aligned (and the throttle, the selector) see the file's CephFS layout: 6 targets of 64 KiB, from
    "cephfs"; a file of the default layout is one target of its 4 MiB unit."""
    stats = job.tmp / "s.json"
    config = hints_config(job, 6, 65536, strategy="target_aligned", virtual_node_size=1)
    res, _ = job.kernel(2, *IOR, "-o", cephfs / "aligned.dat", preload=True, config=config, stats=stats)
    assert res["verified"]
    f = file_stats(stats, "aligned.dat")
    assert f["storage_targets"] == {"count": 6, "unit": 65536, "from": "cephfs"}
    assert f["strategies"]["target_aligned"]["calls"] > 0
    config = write_json(job.tmp / "d.json", {"version": 1, "files": [
        {"match": "*", "collective": {"strategy": "target_aligned", "virtual_node_size": 1}}]})
    res, _ = job.kernel(2, *IOR, "-o", cephfs / "plain.dat", preload=True, config=config, stats=stats)
    assert res["verified"]
    assert file_stats(stats, "plain.dat")["storage_targets"] == {"count": 1, "unit": 4194304, "from": "cephfs"}


def test_the_throttle_gates_each_object_position(job, cephfs):
    """The throttle's per-target gates see the CephFS layout: 64 KiB requests over 6 objects of 64 KiB units reach
    6 targets, each gated on its own; a file of the default layout is one target."""
    config = hints_config(job, 6, 65536)
    data = json.loads(config.read_text())
    data["defaults"]["throttle"] = {"writers": 1}
    write_json(config, data)
    independent = ["ior", "-a", "MPIIO", "-b", "1m", "-t", "64k", "-k", "-w", "-W"]  # ROMIO passes each request
    stats = job.tmp / "s.json"
    res, _ = job.kernel(2, *independent, "-o", cephfs / "gated.dat", preload=True, config=config, stats=stats)
    assert res["verified"] and layout(cephfs / "gated.dat")["stripe_count"] == 6
    gates = json.loads(stats.read_text())["modules"]["throttle"]["targets"]
    assert len({g["target"] for g in gates}) == 6
    assert all(g["write"]["requests"] > 0 and g["write"]["max_inside"] <= 1 for g in gates)
    del data["defaults"]["mpiio_hints"]
    write_json(config, data)
    res, _ = job.kernel(2, *independent, "-o", cephfs / "gated1.dat", preload=True, config=config, stats=stats)
    assert res["verified"] and len(json.loads(stats.read_text())["modules"]["throttle"]["targets"]) == 1


def test_the_applications_own_hints_are_honoured(job, cephfs):
    """(c) Hints the application passes to MPI_File_open set the layout too; a unit alone keeps the count."""
    path, stats = cephfs / "app.dat", job.tmp / "s.json"
    job.run(2, [PRINT_HINTS, "-h", "striping_factor=4", "-h", "striping_unit=131072", path], preload=True,
            stats=stats)
    assert layout(path) == {"stripe_unit": 131072, "stripe_count": 4, "object_size": 4194304}
    job.run(2, [PRINT_HINTS, "-h", "striping_unit=3145728", cephfs / "unit.dat"], preload=True, stats=stats)
    # 4 MiB objects are not a whole number of 3 MiB units: the objects grow to 6 MiB
    assert layout(cephfs / "unit.dat") == {"stripe_unit": 3145728, "stripe_count": 1, "object_size": 6291456}
    job.run(2, [PRINT_HINTS, "-h", "striping_factor=4", cephfs / "bare.dat"])  # the library alone: no layout
    assert layout(cephfs / "bare.dat") == DEFAULT


def test_a_file_with_data_keeps_its_layout(job, cephfs):
    """(d) MPI_MODE_CREATE on a file that has data: CephFS refuses a new layout, the file keeps its layout and its
    bytes, and the statistics say why."""
    path, stats = cephfs / "full.dat", job.tmp / "s.json"
    data = random.Random(7).randbytes(300000)
    path.write_bytes(data)
    p = job.run(2, [PRINT_HINTS, path], preload=True, config=hints_config(job, 6, 65536), stats=stats)
    assert layout(path) == DEFAULT and path.read_bytes() == data
    assert "warning" not in p.stderr
    f = file_stats(stats, "full.dat")
    assert f["passthrough_reasons"] == {
        "posix: striping hints not applied: the file has data (CephFS sets the layout of empty files only)": 2}
    assert "storage_layout" not in f.get("posix", {})


@pytest.mark.parametrize("source", ["application", "configuration"])
def test_an_invalid_unit_is_refused_with_a_warning(job, cephfs, source):
    """(e) A unit CephFS does not take (not a multiple of 64 KiB): a warning naming the file, the hint and what
    CephFS takes; the file keeps the default layout and the job goes on. The configuration refuses units below
    1024 itself (iotame config check), so there the unit is 100000."""
    path, stats = cephfs / f"bad-{source}.dat", job.tmp / "s.json"
    if source == "application":
        unit = 1000
        p = job.run(2, [PRINT_HINTS, "-h", "striping_factor=6", "-h", f"striping_unit={unit}", path], preload=True,
                    stats=stats)
    else:
        unit = 100000
        p = job.run(2, [KERNEL, *IOR, "-o", path], preload=True, config=hints_config(job, 6, unit), stats=stats)
        assert json.loads(p.stdout)["verified"]
    assert layout(path) == DEFAULT
    (warning,) = [line for line in p.stderr.splitlines() if "iotame: warning" in line]
    assert str(path.name) in warning and f"striping_unit={unit}" in warning and "multiple of 65536" in warning
    f = file_stats(stats, path.name)
    assert f["passthrough_reasons"] == {
        "posix: striping hints not applied: not a layout CephFS takes (rank 0's warning says why)": 2}


def test_the_osd_keeps_its_objects_in_bluestore_on_the_clusters_tmpfs(cephfs):
    """--osd-store bluestore: the OSD says it runs BlueStore, and its block file (the size --osd-bytes asks) is in
    the cluster's tmpfs, which holds the data a synced write left."""
    cluster = cephfs.parent / "cluster"
    p = subprocess.run(["ceph", "-c", cluster / "ceph.conf", "osd", "metadata", "0", "--format", "json"],
                       check=True, capture_output=True, text=True, timeout=60)
    assert json.loads(p.stdout)["osd_objectstore"] == "bluestore"
    assert os.path.ismount(cluster / "blocks")
    block = cluster / "blocks" / "osd.0"
    assert block.stat().st_size == 1 << 30
    before = shutil.disk_usage(cluster / "blocks").used
    data = os.urandom(8 << 20)
    with open(cephfs / "bluestore-check", "wb") as f:
        f.write(data)
        os.fsync(f.fileno())
    assert shutil.disk_usage(cluster / "blocks").used >= before + len(data)
    assert (cephfs / "bluestore-check").read_bytes() == data
