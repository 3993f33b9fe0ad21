"""Runs in a child process (`python -m iotame.advise._worker LOG [--dxt]`): reads a Darshan log with pydarshan and
prints its records (with --dxt also its DXT traces, for the replay) as one JSON document on stdout. A child, because darshan's C library reports a damaged log on stderr
and may abort the process (an assertion in darshan_log_close on a truncated log): the parent (load.py) sees the
exit status and the messages instead of losing the `iotame` process."""
from __future__ import annotations

import json
import sys
from typing import Any

from iotame.advise.modbytes import module_bytes

# The modules advise reads; the others (STDIO, DXT_*, HEATMAP, ...) are only listed.
WORKER_MODULES = ("POSIX", "MPI-IO", "H5F", "H5D", "LUSTRE")


def _worker_get(rec: Any, key: str) -> Any:
    """A field of one pydarshan record (its wrapper has no working `in`), None when absent."""
    try:
        return rec[key]
    except KeyError:
        return None


def _worker_plain(rec: Any, names: list[str], fnames: list[str]) -> dict:
    out: dict[str, Any] = {"id": int(rec["id"]), "rank": int(rec["rank"]),
                           "counters": dict(zip(names, (int(v) for v in rec["counters"])))}
    fc = _worker_get(rec, "fcounters")
    if fc is not None:
        out["fcounters"] = dict(zip(fnames, (float(v) for v in fc)))
    parent = _worker_get(rec, "file_rec_id")
    if parent is not None:
        out["file_rec_id"] = int(parent)
    return out


def _worker_lustre(rec: Any, names: list[str]) -> dict:
    """A LUSTRE record: pydarshan 3.5 gives layout components (PFL): the first component's stripe size and count,
    and the OSTs of every component; older ones one layout (LUSTRE_STRIPE_SIZE, LUSTRE_STRIPE_WIDTH, ost_ids)."""
    out = {"id": int(rec["id"]), "rank": int(rec["rank"])}
    comps = _worker_get(rec, "components")
    if comps is None:
        c = dict(zip(names, (int(v) for v in rec["counters"])))
        return {**out, "stripe_size": c.get("LUSTRE_STRIPE_SIZE", 0), "stripe_count": c.get("LUSTRE_STRIPE_WIDTH", 0),
                "osts": [int(o) for o in (_worker_get(rec, "ost_ids") or [])]}
    osts: list[int] = []
    for comp in comps:
        osts.extend(int(o) for o in comp.get("ost_ids", []))
    first = comps[0]["counters"] if comps else [0, 0]    # LUSTRE_COMP_STRIPE_SIZE, LUSTRE_COMP_STRIPE_COUNT
    return {**out, "stripe_size": int(first[0]), "stripe_count": int(first[1]), "osts": osts}


def _worker_dxt(rec: dict) -> dict:
    """A DXT record: per direction its segments as [offset, length, start, end]."""
    out = {"id": int(rec["id"]), "rank": int(rec["rank"])}
    for key in ("write_segments", "read_segments"):
        seg = rec.get(key)
        out[key] = [] if seg is None or len(seg) == 0 else [
            [int(o), int(n), float(s), float(e)]
            for o, n, s, e in zip(seg["offset"], seg["length"], seg["start_time"], seg["end_time"])]
    return out


def worker_read(path: str, dxt: bool = False) -> dict:
    import darshan  # noqa: imported here so that the parent need not load pandas and the C library
    r = darshan.DarshanReport(path, read_all=False)
    job = r.metadata.get("job", {})
    out: dict[str, Any] = {
        "job": {"nprocs": int(job.get("nprocs", 0)), "run_time": float(job.get("run_time", 0.0)),
                "jobid": int(job.get("jobid", 0)), "log_ver": str(job.get("log_ver", "")),
                "lib_ver": str((job.get("metadata") or {}).get("lib_ver", "")),
                "start_time": int(job.get("start_time_sec", 0)), "end_time": int(job.get("end_time_sec", 0))},
        "exe": str((r.metadata.get("exe") or "")).split(" ")[0],
        "modules": list(r.modules.keys()),
        "partial_modules": [m for m, info in r.modules.items() if info.get("partial_flag")],
        "records": {},
    }
    for mod in WORKER_MODULES:
        if mod not in r.modules:
            continue
        if mod == "LUSTRE":
            r.mod_read_all_lustre_records(warnings=False)
        else:
            r.mod_read_all_records(mod, warnings=False)
        recs = r.records.get(mod, [])
        names = r.counters[mod]["counters"]
        if mod == "LUSTRE":
            out["records"][mod] = [_worker_lustre(recs[i], names) for i in range(len(recs))]
            continue
        fnames = r.counters[mod]["fcounters"]
        out["records"][mod] = [_worker_plain(recs[i], names, fnames) for i in range(len(recs))]
    for mod in ("DXT_POSIX", "DXT_MPIIO") if dxt else ():
        if mod in r.modules:
            r.mod_read_all_dxt_records(mod, warnings=False)
            out["records"][mod] = [_worker_dxt(rec) for rec in r.records[mod].to_df()]
    out["module_bytes"] = module_bytes(r)      # advise's (modbytes.py): the modules it does not analyse
    r.read_name_records()
    out["names"] = {str(k): v for k, v in r.name_records.items()}
    return out


if __name__ == "__main__":
    json.dump(worker_read(sys.argv[1], "--dxt" in sys.argv[2:]), sys.stdout)
    sys.stdout.write("\n")
