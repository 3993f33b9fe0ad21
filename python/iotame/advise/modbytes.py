"""The bytes of the modules advise does not analyse (STDIO, DAOS, DFS, ...), read in the worker's child process, so
that the advice can name them ("STDIO: 8 GB, not analysed") instead of staying silent about I/O it did not see.

Modules layered on what advise reads (HDF5, PnetCDF over MPI-IO and POSIX) and the traces (DXT_*, HEATMAP) are not
counted here: their bytes are in the POSIX and MPI-IO records already.
"""
from __future__ import annotations

from typing import Any

__all__ = ["LAYERED", "module_bytes"]

# Modules whose bytes reach the file system through the POSIX or MPI-IO modules (or that hold no bytes).
LAYERED = ("POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "LUSTRE", "HEATMAP", "APMPI", "APXC",
           "BG/Q", "MDHIM", "DXT_POSIX", "DXT_MPIIO")


def module_bytes(report: Any) -> dict[str, dict[str, Any]]:
    """Per module not LAYERED: {"bytes_read", "bytes_written"} summed over its records (its counters named
    *_BYTES_READ and *_BYTES_WRITTEN), or {"error": why} when pydarshan cannot read the module."""
    out: dict[str, dict[str, Any]] = {}
    for mod in report.modules:
        if mod in LAYERED or mod.startswith("DXT"):
            continue
        try:
            report.mod_read_all_records(mod, warnings=False)
            names = list(report.counters[mod]["counters"])
            recs = report.records.get(mod, [])
            read = [i for i, n in enumerate(names) if n.endswith("_BYTES_READ")]
            written = [i for i, n in enumerate(names) if n.endswith("_BYTES_WRITTEN")]
            total_r = total_w = 0
            for i in range(len(recs)):
                c = recs[i]["counters"]
                total_r += sum(max(0, int(c[j])) for j in read)
                total_w += sum(max(0, int(c[j])) for j in written)
            out[mod] = {"bytes_read": total_r, "bytes_written": total_w}
        except Exception as e:      # a module this pydarshan cannot read: named, without bytes
            out[mod] = {"error": f"{type(e).__name__}: {e}"}
    return out
