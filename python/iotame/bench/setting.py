"""Where a bench's MPI jobs run: this machine, or the hosts of the testbed (scripts/testbed, docs/testbed.md), on
the real file system or on emulated striped storage targets (docs/emulate.md)."""
from ..paths import repo_root

ROOT = repo_root()
TESTBED = ROOT / "scripts" / "testbed"


class Setting:
    """Where the jobs run. hosts 0: every rank on this machine, node_local's nodes virtual (half the ranks each);
    hosts N: the testbed's N hosts (scripts/testbed, up beforehand), per_host ranks on each, the nodes real (no
    virtual_node_size). targets T: every configuration, `default` included (the library's own collective I/O
    through the wrappers), on T emulated disks striped in target_unit units (the PVFS2 servers of Orthrus: Zhang,
    Ou, Davis and Jiang, ISC 2014); 0: the real file system."""

    def __init__(self, hosts=0, per_host=1, mpi=None, targets=0, target_unit=65536, device="disk"):
        # mpi None: MPICH, but the Open MPI build for more than 2 testbed ranks (it yields when idle; MPICH busy-polls)
        mpi = mpi or ("openmpi" if hosts * per_host > 2 else "mpich")
        self.hosts, self.per_host, self.mpi = hosts, per_host, mpi
        self.targets, self.target_unit, self.device = targets, target_unit, device
        build = ROOT / ("build-openmpi" if mpi == "openmpi" else "build")
        self.kernel, self.lib = build / "kernels" / "iotame-kernel", build / "runtime" / "libiotame.so"

    @property
    def nprocs(self):
        """Ranks of a job: every host's, else the 2 of this machine."""
        return self.hosts * self.per_host or 2

    def to_json(self):
        return {k: getattr(self, k) for k in ("hosts", "per_host", "mpi", "targets", "target_unit", "device")}

    def argv(self, np_, *command):
        if not self.hosts:
            # Open MPI on this machine: more ranks than cores (it yields when idle)
            launcher = ["mpirun.openmpi", "--oversubscribe"] if self.mpi == "openmpi" else ["mpiexec"]
            return [*launcher, "-n", str(np_), *map(str, command)]
        # Open MPI's ROMIO rather than its default OMPIO: ROMIO is the library MPICH has, Orthrus', and the one
        # whose hints the runtime sets
        mpi = ["env", "OMPI_MCA_io=romio321", str(TESTBED), "mpiexec", "--openmpi"] if self.mpi == "openmpi" else \
            [str(TESTBED), "mpiexec"]
        return [*mpi, "-n", str(np_), "--per-host", str(self.per_host), "--", *map(str, command)]

    def env(self):
        """What the launcher's environment needs besides the caller's: Open MPI as root, its shared-memory transport
        without single-copy, as this VM needs (docs/slurm.md)."""
        if self.mpi != "openmpi":
            return {}
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}

    def section(self, section, nprocs, state):
        """A configuration's defaults in this setting (None: no preload)."""
        if self.targets:
            section = dict(section or {})
            # write_behind off: Orthrus' benchmarks synchronized after every operation, so its servers' disks
            # positioned for writes as for reads
            section["emulate"] = {"device": self.device, "targets": self.targets, "target_unit": self.target_unit,
                                  "write_behind": False, "state": str(state)}
        coll = (section or {}).get("collective", {})
        if coll.get("virtual_node_size") == "VNODE":
            if self.hosts:
                del coll["virtual_node_size"]
            else:
                coll["virtual_node_size"] = max(1, nprocs // 2)
        return section
