"""The layers of the I/O stack a search space is organized by, and the configuration sections behind them.

    mpiio     section mpiio_hints (the MPI-IO hints, striping hints excepted)
    striping  section mpiio_hints: the file-system striping hints (striping_factor, striping_unit, start_iodevice)
    hdf5      section hdf5
    iotame    sections collective, throttle, staging (iotame's own strategies)

A setting joins its layer by its section in runtime/settings.json, so a new runtime setting needs no change here.
"""
from __future__ import annotations

__all__ = ["LAYERS", "STRIPING_HINTS", "layer_of", "param_key"]

# layer -> the configuration sections whose settings it holds
LAYERS: dict[str, tuple[str, ...]] = {
    "mpiio": ("mpiio_hints",),
    "striping": ("mpiio_hints",),
    "hdf5": ("hdf5",),
    "iotame": ("collective", "throttle", "staging", "memory"),
}

# RATIONALE: striping is a property of the file system, set through MPI-IO hints; H5Evolve searched it as its own
# layer ("Parallel_File_System"), and users think of it that way, so it gets its own TOML table.
STRIPING_HINTS = frozenset({"striping_factor", "striping_unit", "start_iodevice"})


def layer_of(section: str, name: str) -> str | None:
    """The layer of setting `name` of configuration section `section` (None: not tunable, e.g. free sections)."""
    if section == "mpiio_hints":
        return "striping" if name in STRIPING_HINTS else "mpiio"
    for layer, sections in LAYERS.items():
        if layer not in ("mpiio", "striping") and section in sections:
            return layer
    return None


def param_key(layer: str, section: str, name: str) -> str:
    """The name of a parameter in a study: `mpiio.cb_nodes`, `striping.striping_factor`, `hdf5.alignment`,
    and for the iotame layer, which has several sections, `iotame.collective.strategy`."""
    return f"{layer}.{section}.{name}" if len(LAYERS[layer]) > 1 else f"{layer}.{name}"
