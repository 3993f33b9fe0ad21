"""The job a study tunes: process counts from launcher options, launch templates, study names, file systems."""
import pytest

from iotame.errors import UsageError
from iotame.tune import detect_fs, nprocs_from_command, resolve_job, study_name
from iotame.tune.fsdetect import fs_of_type, mount_type


@pytest.mark.parametrize("cmd, n", [
    (["mpiexec", "-n", "4", "./app"], 4),
    (["mpiexec", "-np", "8", "./app", "-n", "3"], 8),           # the program's own -n is not the launcher's
    (["/usr/bin/mpirun", "--np", "2", "app"], 2),
    (["mpiexec", "-ppn", "2", "-n", "6", "app"], 6),
    (["mpiexec", "-n=3", "app"], 3),
    (["srun", "-n", "16", "app"], 16),
    (["srun", "-n4", "app"], 4),
    (["srun", "--ntasks=12", "app"], 12),
    (["srun", "-c", "4", "--ntasks", "2", "app"], 2),              # srun -c is CPUs per task
    (["mpirun", "-c", "5", "app"], 5),                            # Open MPI's -c is the count
    (["mpiexec", "./app"], None),
    (["./app", "-n", "4"], None),                                 # no launcher
])
def test_nprocs_from_command(cmd, n):
    assert nprocs_from_command(cmd) == n


def test_resolve_job():
    job = resolve_job(["mpiexec", "-n", "2", "app"])
    assert (job.argv, job.nprocs, job.launched) == (("mpiexec", "-n", "2", "app"), 2, True)
    assert resolve_job(["mpiexec", "app"], np=3).nprocs == 3
    assert resolve_job(["./app", "x"]).argv == ("./app", "x") and resolve_job(["./app"]).nprocs == 1
    assert resolve_job(["./app", "x"], np=4).argv == ("mpiexec", "-n", "4", "./app", "x")
    # srun's --mpi plugin and the Slurm allocation: tests/python/test_slurm_env.py
    assert resolve_job(["./app"], np=4, launcher="srun", srun_plugin="default").argv == ("srun", "-n", "4", "./app")
    assert resolve_job(["./app"], launcher="srun", srun_plugin="pmi2", env={}).argv == \
        ("srun", "--mpi=pmi2", "-n", "1", "./app")


@pytest.mark.parametrize("cmd, kw, message", [
    ([], {}, "tune: no command given (iotame tune [options] -- CMD...)"),
    (["mpiexec", "app"], {}, "tune: cannot tell the process count from `mpiexec app ...`: give --np N"),
    (["mpiexec", "-n", "2", "app"], {"np": 4}, "tune: --np 4 disagrees with the command's process count 2"),
    (["app"], {"launcher": "aprun"}, "tune: unknown launcher 'aprun' (expected one of: mpiexec, srun)"),
])
def test_resolve_job_errors(cmd, kw, message):
    with pytest.raises(UsageError) as e:
        resolve_job(cmd, **kw)
    assert str(e.value) == message


def test_study_name_is_stable_and_names_the_program():
    job = resolve_job(["mpiexec", "-n", "2", "/x/iotame-kernel", "ior", "-b", "1m"])
    name = study_name(job)
    assert name.startswith("iotame-kernel-ior-np2-") and name == study_name(job)
    assert study_name(resolve_job(["mpiexec", "-n", "2", "/x/iotame-kernel", "ior", "-b", "2m"])) != name
    assert study_name(resolve_job(["./app", "/data/in.h5"])).startswith("app-np1-")


MOUNTS = """/dev/vda / ext4 rw 0 0
10.0.0.1@tcp:/scratch /lus lustre rw 0 0
gpfs1 /gpfs/proj gpfs rw 0 0
tmpfs /lus/tmp\\040dir tmpfs rw 0 0
ceph-fuse /mnt/cephfs fuse.ceph-fuse rw,nosuid,nodev,relatime,user_id=0,group_id=0,allow_other 0 0
10.0.0.2:6789:/ /ceph ceph rw,name=admin 0 0
sshfs#me@host: /mnt/other fuse.sshfs rw 0 0
"""


def test_detect_fs_from_mounts():
    assert detect_fs("/lus/user/run", MOUNTS) == "lustre"
    assert detect_fs("/gpfs/proj/a", MOUNTS) == "gpfs"
    assert detect_fs("/gpfs/projx", MOUNTS) == "local"
    assert detect_fs("/lus/tmp dir/x", MOUNTS) == "local"        # the longest mount point wins
    assert detect_fs("/home", MOUNTS) == "local"
    assert detect_fs("/mnt/cephfs/run/x.dat", MOUNTS) == "cephfs"  # ceph-fuse
    assert detect_fs("/ceph/a", MOUNTS) == "cephfs"                # the kernel client
    assert detect_fs("/mnt/other/a", MOUNTS) == "local"            # another FUSE file system
    stacked = "/dev/vda /mnt/c ext4 rw 0 0\nceph-fuse /mnt/c fuse.ceph-fuse rw 0 0\n"
    assert mount_type("/mnt/c/x.dat", stacked) == "fuse.ceph-fuse"   # the mount on top, not the one under it
    assert detect_fs("/mnt/c/x.dat", stacked) == "cephfs"


def test_fs_of_stat_type():
    assert fs_of_type("lustre\n") == "lustre"
    assert fs_of_type("UNKNOWN (0x47504653)") == "gpfs"
    assert fs_of_type("ext2/ext3") == "local"
    assert fs_of_type("ceph\n") == "cephfs" and fs_of_type("UNKNOWN (0x00c36400)") == "cephfs"
    assert fs_of_type("fuseblk") == "local"  # stat -f cannot tell ceph-fuse from another FUSE file system


def test_detect_fs_here(tmp_path):
    assert detect_fs(tmp_path) in ("local", "lustre", "gpfs", "cephfs")


def test_help(capsys):
    from iotame.cli import main
    assert main(["tune", "--help"]) == 0 and "--sampler {ga,tpe,random,grid}" in capsys.readouterr().out
    assert main(["report", "--help"]) == 0
