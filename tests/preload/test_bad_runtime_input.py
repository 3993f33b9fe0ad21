"""Files the runtime reads or writes at run time that are not what it expects (issue 36, part 6): a knowledge file of
another version or cut short, a profile cut short, a statistics path that cannot be written. Each gives a warning
naming the file, the job runs on without it with its data intact, and nothing of the user's is changed; ranks given
different configurations all run under rank 0's, and rank 0 says so."""
import json
import subprocess

from conftest import KERNEL, collective_config, file_stats, served
from test_collective import MATRIX_LONG, NAMES
from test_profile_runtime import auto_run, profile_for


def matrix_job(job, config, stats):
    res, p = job.kernel(2, "matrix", *MATRIX_LONG, preload=True, config=config, stats=stats)
    assert p.returncode == 0 and res["verified"] is True, p.stderr
    return p


def a_real_knowledge_file(job):
    knowledge = job.tmp / "knowledge.json"
    matrix_job(job, collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge)),
               job.tmp / "first.json")
    assert json.loads(knowledge.read_text())["version"] >= 2
    return knowledge


def test_a_knowledge_file_of_another_version_is_reported_and_kept(job):
    knowledge = a_real_knowledge_file(job)
    doc = json.loads(knowledge.read_text())
    doc["version"] = 99
    knowledge.write_text(json.dumps(doc))
    before = knowledge.read_bytes()
    stats = job.tmp / "stats.json"
    p = matrix_job(job, collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge)), stats)
    assert f"knowledge file {knowledge} is not a knowledge file" in p.stderr
    assert all(not d["from_knowledge"] for d in file_stats(stats, NAMES["matrix"])["decisions"])
    assert knowledge.read_bytes() == before                       # another version's file is not overwritten


def test_a_knowledge_file_cut_short_is_reported_and_kept(job):
    knowledge = a_real_knowledge_file(job)
    text = knowledge.read_bytes()
    knowledge.write_bytes(text[:len(text) // 2])
    stats = job.tmp / "stats.json"
    p = matrix_job(job, collective_config(job.tmp / "c.json", strategy="auto", knowledge=str(knowledge)), stats)
    assert f"knowledge file {knowledge}" in p.stderr and "not a knowledge file" in p.stderr
    assert all(not d["from_knowledge"] for d in file_stats(stats, NAMES["matrix"])["decisions"])
    assert knowledge.read_bytes() == text[:len(text) // 2]


def test_a_profile_cut_short_is_refused_and_the_job_runs_on(job):
    profile = profile_for(job.tmp, job.tmp / "p.json")
    text = profile.read_bytes()
    profile.write_bytes(text[:len(text) // 3])
    f, stderr = auto_run(job, profile=str(profile))
    assert f"iotame: profile {profile}" in f["profile_refused"] and str(profile) in stderr
    assert "profile" not in f and all("model" not in d for d in f["decisions"])
    assert profile.read_bytes() == text[:len(text) // 3]


def test_statistics_that_cannot_be_written_warn_and_the_job_succeeds(job):
    blocker = job.tmp / "not-a-directory"
    blocker.write_text("a file where the statistics' directory should be")
    stats = blocker / "stats.json"                 # ENOTDIR, even for root
    res, p = job.kernel(2, "matrix", *MATRIX_LONG, preload=True, stats=stats)
    assert p.returncode == 0 and res["verified"] is True
    assert f"cannot write the statistics to {stats}" in p.stderr
    assert blocker.read_text() == "a file where the statistics' directory should be"


def test_ranks_given_different_configurations_run_under_rank_0s_and_say_so(job):
    """mpiexec's per-rank environments (MPMD) with two configurations: every rank applies rank 0's (the runtime
    broadcasts its bytes, so the ranks cannot disagree inside a collective), and rank 0 warns."""
    configs = [collective_config(job.tmp / f"c{r}.json", strategy=s) for r, s in enumerate(("two_phase", "view_based"))]
    stats = job.tmp / "stats.json"
    env = job.env(preload=True, stats=stats)
    cmd = ["mpiexec"]
    for r, config in enumerate(configs):
        cmd += [*([":"] if r else []), "-n", "1", "-env", "IOTAME_CONFIG", str(config), str(KERNEL), "matrix",
                *MATRIX_LONG]
    p = subprocess.run(cmd, env=env, cwd=job.tmp, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout)["verified"] is True, p.stderr
    assert f"IOTAME_CONFIG differs between ranks: every rank uses rank 0's ({configs[0]})" in p.stderr
    assert set(served(file_stats(stats, NAMES["matrix"]))) == {"two_phase"}
    same = subprocess.run(["mpiexec", "-n", "2", "-env", "IOTAME_CONFIG", str(configs[0]), str(KERNEL), "matrix",
                           *MATRIX_LONG], env=env, cwd=job.tmp, capture_output=True, text=True, timeout=120)
    assert same.returncode == 0 and "differs between ranks" not in same.stderr
