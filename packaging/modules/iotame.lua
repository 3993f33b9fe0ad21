-- An Lmod module file for iotame installed in one prefix: the Python command in a virtual environment at the
-- prefix, the runtime installed into the same prefix by CMake (docs/runtime.md, "One prefix for both"):
--
--   python3 -m venv /opt/iotame/0.1.0 && /opt/iotame/0.1.0/bin/pip install ./python
--   cmake --install build --prefix /opt/iotame/0.1.0
--
-- Copy it to <modulefiles>/iotame/0.1.0.lua and set `prefix` below; `module load iotame` then gives `iotame`,
-- `iotame-kernel` and the runtime (iotame finds it in its own prefix; IOTAME_PREFIX says it explicitly).
local prefix = "/opt/iotame/0.1.0"

whatis("Name: iotame")
whatis("Description: adaptive parallel I/O for MPI and HDF5 applications (tuner and LD_PRELOAD runtime)")
help([[iotame tune -- srun ./app    searches MPI-IO/HDF5 settings; iotame run --config best.json -- srun ./app]])

-- the runtime is built for one MPI: load the same MPI module first (a site adds e.g. depends_on("mpich"))
prepend_path("PATH", pathJoin(prefix, "bin"))
prepend_path("PKG_CONFIG_PATH", pathJoin(prefix, "lib", "pkgconfig"))
prepend_path("CMAKE_PREFIX_PATH", prefix)
setenv("IOTAME_PREFIX", prefix)
