"""The multi-host testbed (scripts/testbed, docs/testbed.md): hosts as network + UTS + IPC namespaces on a shaped
bridge. It comes up, reconfigures and goes down leaving nothing behind; MPI jobs launched across its hosts see the
hosts (processor names, MPI_COMM_TYPE_SHARED, the runtime's node count) and get our variables; and a job spanning
two hosts passes the randomized differential test under every strategy, node_local on real nodes (no
virtual_node_size). Needs root (namespaces): skipped otherwise."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import LIBIOTAME, ROOT, sample, served, write_json
from tbjobs import STRATEGIES, TESTBED, assert_clean, job, ok, ompi_build, random_job, root_view, tb

AGENT = ROOT / "scripts" / "testbed-agent"
WHERE = Path(__file__).with_name("where.c")

if os.geteuid() != 0:
    pytest.skip("the testbed needs root (network and UTS namespaces)", allow_module_level=True)


@pytest.fixture(scope="module")
def hosts():
    """Two hosts up for the module's jobs; down (and nothing left) after it."""
    tb("up", "--hosts", 2)
    yield ["tb0", "tb1"]
    tb("down")
    assert_clean()


def compile_where(tmp, mpicc):
    exe = tmp / f"where-{Path(mpicc).name}"
    subprocess.run([mpicc, "-O2", "-o", exe, WHERE], check=True, capture_output=True)
    return exe


# ---- up, reconfigure, status, down ----

def test_up_reconfigure_down_leaves_nothing():
    tb("down")
    before = root_view()
    assert tb("status", check=False).returncode != 0
    tb("up", "--hosts", 3, "--rate", "100mbit", "--delay", "0")
    tb("up", "--hosts", 3, "--rate", "100mbit", "--delay", "0")      # idempotent
    st = json.loads(tb("status", "--json").stdout)
    assert st["up"] and st["hosts"] == ["tb0", "tb1", "tb2"] and st["rate"] == "100mbit"
    tb("up", "--hosts", 2)                                             # fewer hosts, another rate
    st = json.loads(tb("status", "--json").stdout)
    assert st["up"] and st["hosts"] == ["tb0", "tb1"] and st["addresses"] == ["10.213.0.1", "10.213.0.2"]
    assert st["rate"] == "1gbit" and st["qdisc"] in ("tbf", "netem")
    for h in st["detail"]:
        assert h["hostname"] == h["host"] and h["link"] == "up"
        assert "rate 1Gbit" in h["egress"] and "rate 1Gbit" in h["ingress"]   # both directions shaped
    assert "tb2" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not Path("/etc/netns/tb2").exists()
    # nothing of the testbed in the root namespace: no link, no address
    view = root_view()
    assert view["links"] == before["links"] and view["addresses"] == 0
    tb("down")
    tb("down")                                                         # idempotent
    assert tb("status", check=False).returncode != 0
    assert_clean()
    assert root_view() == before


def test_hosts_have_their_names_addresses_and_hosts_files(hosts):
    for k, h in enumerate(hosts):
        assert tb("exec", h, "hostname").stdout.strip() == h
        addr = tb("exec", h, "ip", "-4", "-o", "addr", "show", "eth0").stdout
        assert f"10.213.0.{k + 1}/24" in addr
        resolved = tb("exec", h, "getent", "hosts", *hosts).stdout.split()
        assert resolved == ["10.213.0.1", "tb0", "10.213.0.2", "tb1"]
    # one host reaches the other over the bridge (a TCP connection through bash's /dev/tcp to a listener)
    server = subprocess.Popen([str(TESTBED), "exec", "tb1", "python3", "-c",
                               "import socket; s=socket.socket(); s.bind(('tb1', 5999)); s.listen(1); "
                               "c,a=s.accept(); c.sendall(a[0].encode()); c.close()"], stdout=subprocess.PIPE,
                              text=True)
    try:
        for _ in range(50):
            p = tb("exec", "tb0", "python3", "-c", "import socket; c=socket.create_connection(('tb1', 5999)); "
                   "print(c.recv(64).decode())", check=False)
            if p.returncode == 0:
                break
            time.sleep(0.1)
        assert p.stdout.strip() == "10.213.0.1"
    finally:
        server.kill()
        server.wait()


def test_the_agent_takes_ssh_options_and_runs_the_command_in_a_shell(hosts):
    p = subprocess.run([str(AGENT), "-x", "-q", "-o", "BatchMode=yes", "-p22", "-l", "root", "tb1",
                        "echo", "$(hostname)", "'a  b'"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == "tb1 a  b\n", p.stderr
    p = subprocess.run([str(AGENT), "root@tb0", "exit 3"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 3
    p = subprocess.run([str(AGENT), "nosuchhost", "true"], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "not a testbed host" in p.stderr


# ---- where the ranks run ----

def test_mpich_ranks_see_the_hosts(hosts, tmp_path):
    exe = compile_where(tmp_path, "mpicc")
    out, err, rc = job(tmp_path, 2, [exe, "LD_PRELOAD", "IOTAME_STATS", "UCX_NET_DEVICES"],
                       env={"LD_PRELOAD": str(LIBIOTAME), "IOTAME_STATS": str(tmp_path / "s.json")})
    assert ok(rc), err[-3000:]
    r = json.loads(out)
    assert r["ring_errors"] == 0
    assert [x["processor"] for x in r["ranks"]] == ["tb0", "tb1"] == [x["hostname"] for x in r["ranks"]]
    assert [(x["node_leader"], x["node_size"]) for x in r["ranks"]] == [(0, 1), (1, 1)]
    for x in r["ranks"]:  # hydra forwards the environment; the testbed adds UCX's
        assert x["env"] == {"LD_PRELOAD": str(LIBIOTAME), "IOTAME_STATS": str(tmp_path / "s.json"),
                            "UCX_NET_DEVICES": "eth0"}
    assert json.loads((tmp_path / "s.json").read_text())["nprocs"] == 2



def test_open_mpi_ranks_see_the_hosts(hosts, ompi_build, tmp_path):
    exe = compile_where(tmp_path, "mpicc.openmpi")
    lib = ompi_build / "runtime" / "libiotame.so"
    out, err, rc = job(tmp_path, 4, [exe, "LD_PRELOAD", "IOTAME_STATS"], per_host=2, openmpi=True,
                       env={"LD_PRELOAD": str(lib), "IOTAME_STATS": str(tmp_path / "s.json")})
    assert rc == 0, err[-3000:]
    r = json.loads(out)
    assert r["ring_errors"] == 0
    assert [x["processor"] for x in r["ranks"]] == ["tb0", "tb0", "tb1", "tb1"]
    assert [(x["node_leader"], x["node_size"]) for x in r["ranks"]] == [(0, 2), (0, 2), (2, 2), (2, 2)]
    for x in r["ranks"]:  # passed with -x to the ranks
        assert x["env"] == {"LD_PRELOAD": str(lib), "IOTAME_STATS": str(tmp_path / "s.json")}
    assert json.loads((tmp_path / "s.json").read_text())["nprocs"] == 4


# ---- the randomized differential test across two hosts ----

@pytest.mark.parametrize("strategy", sample(STRATEGIES, 3, "across_two_hosts"))   # make test-all: every one
def test_random_datatypes_across_two_hosts(hosts, tmp_path, strategy):
    """MPICH, one rank on each of two hosts: files, buffers, statuses and pointers identical to the library's."""
    f = random_job(tmp_path, 2, strategy, 60, 7000)
    assert f["passthrough_reasons"] == {}
    if strategy not in ("auto", "passthrough"):  # passthrough: not routed, the library's own calls
        assert set(served(f)) == {strategy}
    if strategy in ("two_phase", "node_local", "target_aligned", "view_based"):
        assert f["nodes"] == 2  # the engine's nodes are the hosts


def test_node_local_on_two_hosts_of_two_ranks_under_open_mpi(hosts, ompi_build, tmp_path):
    """Open MPI, 2 hosts x 2 ranks: node_local's nodes are the hosts (one aggregator each), and the files match
    OMPIO's."""
    f = random_job(tmp_path, 4, "node_local", 20, 8000, per_host=2, openmpi=True,
                   lib=ompi_build / "runtime" / "libiotame.so", program=ompi_build / "tests" / "random_collective")
    assert set(served(f)) == {"node_local"} and f["passthrough_reasons"] == {}
    assert f["nodes"] == 2


# ---- aggregator caching across two hosts (docs/design/aggregator-caching.md) ----

CACHED = {"staging": {"enabled": True, "collective": "aggregators"},
          "collective": {"strategy": "view_based", "readahead": 0, "block_size": 4096}}


def test_cached_collective_writes_across_two_hosts_match_the_library(hosts, ompi_build, tmp_path):
    """Open MPI, 2 hosts x 2 ranks, test.dat's collective writes cached at the two hosts' aggregators (sync-barrier-
    sync after each write): files, buffers, statuses and pointers identical to OMPIO's on ref.dat."""
    f = random_job(tmp_path, 4, "view_based", 30, 9000, per_host=2, openmpi=True, settings=CACHED,
                   lib=ompi_build / "runtime" / "libiotame.so", program=ompi_build / "tests" / "random_collective")
    assert set(served(f)) == {"view_based"} and f["nodes"] == 2
    stage = json.loads((tmp_path / "s.json").read_text())["modules"]["stage"]
    assert stage["aggregated_calls"] > 0 and stage["agg_drains"] >= stage["aggregated_calls"]


def test_consistency_sequences_across_two_hosts(hosts, ompi_build, tmp_path):
    """agg_sequences, Open MPI, 2 hosts x 2 ranks: a rank's own cached data read at once (collectively, and
    independently while its aggregator is on the other host: the remote wait), overwritten independently, get_size,
    the others' data after sync-barrier-sync, set_size, atomic mode, split collective, close and reopen."""
    config = write_json(tmp_path / "c.json", {"version": 1, "files": [{"match": "*/seq.dat", **CACHED}]})
    stats = tmp_path / "s.json"
    env = {"LD_PRELOAD": str(ompi_build / "runtime" / "libiotame.so"), "IOTAME_CONFIG": str(config),
           "IOTAME_STATS": str(stats)}
    out, err, rc = job(tmp_path, 4, [ompi_build / "tests" / "agg_sequences", tmp_path / "seq.dat"], per_host=2,
                       openmpi=True, env=env)
    assert ok(rc), err[-3000:]
    assert json.loads(out) == {"checked": 4 * 14, "mismatches": 0}
    stage = json.loads(stats.read_text())["modules"]["stage"]
    assert stage["aggregated_calls"] == 4 * 6 and stage["agg_waits"] > 0
