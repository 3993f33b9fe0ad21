"""The knowledge store (runtime/src/core/knowledge.c) end to end: two jobs started at once whose throttle and
selector keep what they learned in the same knowledge file; afterwards both jobs' entries are in it. Real mpiexec
jobs with libiotame.so preloaded. The jobs meet before they end (knowledge_pair), so each has read the file before
either saves: without the store's lock and merge the second save would drop the first one's entries."""
import json
import subprocess

from conftest import TEST_PROGRAMS, write_json

PAIR = TEST_PROGRAMS / "knowledge_pair"
CALLS = 32
# Two request sizes, two throttle signatures (size=2^16, size=2^18) and two selector signatures (bytes per call).
JOBS = {"a": 1 << 16, "b": 1 << 18}
# Two processes per job: a node with one process has no level to search (the throttle's only candidate is 1).
NPROCS = 2


def pair_config(path, knowledge, throttle=True, collective=True):
    defaults = {}
    if throttle:  # levels searched on tiny windows, so that the reads of a short job finish a search
        defaults["throttle"] = {"readers": "auto", "window_seconds": 0.0002, "knowledge": str(knowledge)}
    if collective:  # examined at once (no budget limit), so that the job's calls decide
        defaults["collective"] = {"strategy": "auto", "exam_budget": 1, "virtual_node_size": 1, "readahead": 0,
                                  "knowledge": str(knowledge)}
    return write_json(path, {"version": 1, "defaults": defaults})


def run_pair(job, config):
    """Starts both jobs at once and waits for them: their statistics, by name."""
    procs = {}
    for name, block in JOBS.items():
        other = next(n for n in JOBS if n != name)
        cmd = ["mpiexec", "-n", str(NPROCS), str(PAIR), str(job.tmp), name, other, str(block), str(CALLS)]
        procs[name] = subprocess.Popen(cmd, env=job.env(True, config, job.tmp / f"{name}.stats.json"), cwd=job.tmp,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for name, p in procs.items():
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"job {name} exited {p.returncode}\n{out}\n{err[-3000:]}"
        assert json.loads(out) == {"verified": True, "met": True}, (out, err[-3000:])
        assert "knowledge" not in err, err[-3000:]  # nothing reported: no lock timed out, no file refused
    return {name: json.loads((job.tmp / f"{name}.stats.json").read_text()) for name in JOBS}


def found_levels(stats):
    """The read level each target's search kept in one job (0: none finished)."""
    return [t["read"]["found_level"] for t in stats["modules"]["throttle"]["targets"] if "read" in t]


def throttle_sizes(section):
    """The request-size classes of the read signatures the throttle's section holds, with their levels."""
    out = {}
    for sig, v in section.items():
        words = dict(w.split("=", 1) for w in sig.split()[1:])
        if sig.startswith("read ") and words["procs"] == str(NPROCS):
            out[words["size"]] = v["level"]
    return out


def selector_bytes(section):
    return sorted(e["signature"]["bytes"] for e in section["entries"] if e["signature"]["op"] == "write")


def test_two_jobs_at_once_keep_both_throttle_levels(job):
    """The throttle's knowledge of both jobs: each job's level under its own signature."""
    knowledge = job.tmp / "knowledge.json"
    stats = run_pair(job, pair_config(job.tmp / "c.json", knowledge, collective=False))
    saved = json.loads(knowledge.read_text())
    assert saved["version"] == 2 and set(saved["modules"]) == {"throttle"}
    sizes = throttle_sizes(saved["modules"]["throttle"])
    assert set(sizes) == {"2^16", "2^18"}, saved
    for name, block in JOBS.items():
        (level,) = found_levels(stats[name])
        assert level >= 1 and sizes[f"2^{block.bit_length() - 1}"] == level


def test_two_jobs_at_once_keep_everything_in_one_file_of_the_old_format(job):
    """The selector and the throttle of both jobs in one file, which was the selector's file of version 1: its
    entry is kept, converted, beside the four new ones (two modules, two jobs)."""
    knowledge = job.tmp / "knowledge.json"
    old = {"signature": {"op": "read", "nprocs": 9, "bytes": 1, "requests": 1, "gap": 0}, "strategy": "two_phase",
           "throughputs": {}}
    write_json(knowledge, {"version": 1, "entries": [old]})
    stats = run_pair(job, pair_config(job.tmp / "c.json", knowledge))
    saved = json.loads(knowledge.read_text())
    assert saved["version"] == 2 and set(saved["modules"]) == {"collective", "throttle"}
    assert set(throttle_sizes(saved["modules"]["throttle"])) == {"2^16", "2^18"}
    entries = saved["modules"]["collective"]["entries"]
    assert old in entries
    assert selector_bytes(saved["modules"]["collective"]) == sorted(NPROCS * b for b in JOBS.values())
    for name, block in JOBS.items():  # what each job decided is what the file keeps for its signature
        (d,) = [d for f in stats[name]["files"] if f["path"].endswith(f"{name}.out") for d in f["decisions"]]
        assert d["signature"]["bytes"] == NPROCS * block
        assert [e["signature"] for e in entries].count(d["signature"]) == 1
