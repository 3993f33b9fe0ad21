# A Spack recipe for iotame: the runtime (libiotame.so, iotame-kernel, iotame-config) built with the Spack
# environment's MPI and parallel HDF5, and the `iotame` command installed into the same prefix.
#
#   spack repo add <checkout>/packaging/spack
#   cd <checkout> && spack dev-build iotame@main ^mpich     # from this checkout; or ^openmpi, ~hdf5
#   spack load iotame && iotame info                         # the runtime is found in the package's own prefix
#
# `git` below is where the project is published; `spack dev-build` (or `spack develop`) builds a checkout instead.
# The repository layout (packages/iotame/package.py beside repo.yaml) is the one `spack repo add` expects.
import os

from spack.package import *


class Iotame(CMakePackage):
    """Adaptive parallel I/O for MPI and HDF5 applications: a runtime loaded with LD_PRELOAD that applies and
    adapts MPI-IO and HDF5 settings, and a tuner that finds them by measuring the application."""

    homepage = "https://github.com/iotame/iotame"
    git = "https://github.com/iotame/iotame.git"

    version("main", branch="main")

    variant("hdf5", default=True, description="HDF5 wrappers in the runtime and the HDF5 kernels")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    depends_on("jansson")
    depends_on("hdf5+mpi", when="+hdf5")

    extends("python")
    depends_on("python@3.9:", type=("build", "run"))
    depends_on("py-pip", type="build")
    depends_on("py-setuptools@64:", type="build")
    depends_on("py-wheel", type="build")
    depends_on("py-rich@12:", type="run")
    depends_on("py-optuna@3.4:", type="run")
    depends_on("py-matplotlib@3.6:", type="run")
    depends_on("py-tomli@1.1:", type="run", when="^python@:3.10")
    depends_on("py-psycopg2", type="run")        # a shared tuning study in PostgreSQL (iotame tune --storage)

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define_from_variant("IOTAME_HDF5", "hdf5"),
        ]
        if spec.satisfies("+hdf5"):
            # find_package(HDF5) of the Spack HDF5, not a system one (cmake/hdf5.cmake)
            args.append(self.define("HDF5_ROOT", spec["hdf5"].prefix))
        return args

    @run_after("install")
    def install_python_package(self):
        """The command line into the same prefix; IOTAME_PREFIX at build time makes it find this runtime."""
        os.environ["IOTAME_PREFIX"] = self.prefix
        with working_dir(join_path(self.stage.source_path, "python")):
            python("-m", "pip", "install", "--no-deps", "--no-build-isolation", "--prefix=" + self.prefix, ".")

    def setup_run_environment(self, env):
        env.set("IOTAME_PREFIX", self.prefix)
