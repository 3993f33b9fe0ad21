"""The HDF5 kernels (flashio, vpicio, vorpalio, gcrmio): layouts, verification, corruption reports, options.

The files are checked independently of the kernels' own read phases: dataset shapes with `h5ls -r`, dataset
contents with `h5dump -b` against the pattern contract of kernels/common/pattern.h re-implemented here, keyed by
the logical offsets of kernels/common/h5.h (the run's datasets end to end, writer 0).
"""
import re
import subprocess
from math import prod

import pytest

from conftest import KERNEL
from kernel_helpers import check_phases, mismatch, pattern, reread_corrupted, usage_error

# ---- the expected layouts: [(file, dataset, shape, element size)] in logical order, and phase bytes ----

VPIC_VARS = ["x", "y", "z", "id1", "id2", "px", "py", "pz"]
FLASH_UNK = ["dens", "velx", "vely", "velz", "pres", "ener", "temp", "gamc", "game", "enuc", "gpot", "he4",
             "c12", "o16", "ne20", "mg24", "si28", "s32", "ar36", "ca40", "ti44", "cr48", "fe52", "ni56"]
FLASH_PLOT = ["dens", "temp", "pres", "he4"]
FLASH_FILES = [("checkpoint", "iotame-flashio_chk.h5"), ("plot_centered", "iotame-flashio_plt_cnt.h5"),
               ("plot_corner", "iotame-flashio_plt_crn.h5")]


def opt(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def dims_create(n):
    """MPI_Dims_create(n, 3) for the process counts the tests use."""
    return {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 2, 1)}[n]


def layout(kernel, n, args):
    """Returns (datasets, {phase: bytes}) of a run with n ranks."""
    ds = []
    if kernel == "vpicio":
        p, steps = int(opt(args, "--particles", 65536)), int(opt(args, "--steps", 1))
        ds = [("iotame-vpicio.h5", f"/Step#{s}/{v}", (p * n,), 4) for s in range(steps) for v in VPIC_VARS]
        return ds, {"write": steps * 8 * 4 * p * n, "read": steps * 8 * 4 * p * n}
    if kernel == "flashio":
        m = int(opt(args, "--maxblocks", 10))
        nx, ny, nz = (int(opt(args, f"--n{a}b", 8)) for a in "xyz")
        blocks = sum(min(m, 4 * m // 5 + r % 3) for r in range(n))
        phases = {}
        for k, (phase, name) in enumerate(FLASH_FILES):
            real = 8 if k == 0 else 4
            add = 1 if k == 2 else 0
            meta = [("refine level", (), 4), ("node type", (), 4), ("gid", (15,), 4), ("coordinates", (3,), real),
                    ("block size", (3,), real), ("bounding box", (3, 2), real)]
            unk = FLASH_UNK if k == 0 else FLASH_PLOT
            mine = [(f"/{d}", (blocks, *rest), size) for d, rest, size in meta]
            mine += [(f"/{u}", (blocks, nz + add, ny + add, nx + add), real) for u in unk]
            ds += [(name, d, shape, size) for d, shape, size in mine]
            phases[phase] = sum(prod(s) * e for _, s, e in mine)
        return ds, {f"{ph}_{rw}": v for rw in ["write", "read"] for ph, v in phases.items()}
    if kernel == "vorpalio":
        a, b, c = (int(x) for x in opt(args, "--block", "20x20x12").split("x"))
        comp, steps = int(opt(args, "--components", 3)), int(opt(args, "--steps", 1))
        px, py, pz = dims_create(n)
        shape = (pz * c, py * b, px * a, comp)
        ds = [("iotame-vorpalio.h5", f"/Step#{s}/field", shape, 8) for s in range(steps)]
        return ds, {"write": steps * prod(shape) * 8, "read": steps * prod(shape) * 8}
    if kernel == "gcrmio":
        cells, levels = int(opt(args, "--cells", 2048)), int(opt(args, "--levels", 25))
        counts = [int(opt(args, "--variables", 4)), int(opt(args, "--edge-variables", 1)),
                  int(opt(args, "--corner-variables", 1))]
        for kind, per_cell, count in zip(["cell_var", "edge_var", "corner_var"], [1, 3, 2], counts):
            ds += [("iotame-gcrmio.h5", f"/{kind}_{i}", (per_cell * cells * n, levels), 4) for i in range(count)]
        total = sum(prod(s) * e for _, _, s, e in ds)
        return ds, {"write": total, "read": total}
    raise ValueError(kernel)


def logical_base(ds, file, dataset):
    base = 0
    for f, d, shape, size in ds:
        if (f, d) == (file, dataset):
            return base
        base += prod(shape) * size
    raise KeyError(dataset)


# ---- reading the files with the HDF5 tools ----

def h5_shapes(path):
    out = subprocess.run(["h5ls", "-r", str(path)], capture_output=True, text=True, check=True).stdout
    shapes = {}
    for line in out.splitlines():
        m = re.match(r"^(/\S.*?)\s+Dataset \{([^}]*)\}$", line)
        if m:
            shapes[m.group(1).replace("\\ ", " ")] = tuple(int(x) for x in m.group(2).split(","))
    return shapes


def h5_raw(tmp, path, dataset):
    out = tmp / "raw.bin"
    subprocess.run(["h5dump", "-d", dataset, "-b", "LE", "-o", str(out), str(path)], capture_output=True,
                   check=True)
    data = out.read_bytes()
    out.unlink()
    return data


def h5_properties(path, dataset):
    return subprocess.run(["h5dump", "-p", "-H", "-d", dataset, str(path)], capture_output=True, text=True,
                          check=True).stdout


def h5_offset(path, dataset):
    """File offset of a contiguous dataset's first element."""
    return int(re.search(r"OFFSET (\d+)", h5_properties(path, dataset)).group(1))


def check_files(tmp, kernel, n, args, seed=42):
    """Every dataset has its shape; the first and last dataset of each file hold the pattern at their bases."""
    ds, _ = layout(kernel, n, args)
    files = sorted({f for f, _, _, _ in ds})
    for f in files:
        mine = [(d, shape, size) for g, d, shape, size in ds if g == f]
        assert h5_shapes(tmp / f) == {d: shape for d, shape, _ in mine}, f
        for d, shape, size in {mine[0], mine[-1]}:
            data = h5_raw(tmp, tmp / f, d)
            assert len(data) == prod(shape) * size
            assert data == pattern(logical_base(ds, f, d), len(data), seed=seed), (f, d)
    return files


SMALL = {
    "vpicio": ["--particles", "1000", "--steps", "2"],
    "flashio": ["--maxblocks", "5", "--nxb", "4", "--nyb", "4", "--nzb", "4", "--nguard", "2"],
    "vorpalio": ["--block", "6x5x4", "--steps", "2"],
    "gcrmio": ["--cells", "300", "--levels", "7"],
}

# Each kernel with 1, 2 and 4 ranks; 4 ranks with the transfers of the original benchmark (collective for VPIC-IO
# and VORPAL-IO, independent for FLASH-IO and GCRM-IO); GCRM-IO chunked too.
CASES = [
    ("vpicio", 1, []), ("vpicio", 2, ["--collective"]), ("vpicio", 4, ["--collective"]),
    ("flashio", 1, []), ("flashio", 2, ["--collective"]), ("flashio", 4, []),
    ("vorpalio", 1, []), ("vorpalio", 2, ["--collective"]), ("vorpalio", 4, ["--collective"]),
    ("gcrmio", 1, []), ("gcrmio", 2, ["--collective", "--chunk-cells", "128", "--chunk-levels", "3"]),
    ("gcrmio", 4, ["--chunk-cells", "100"]),
]


@pytest.mark.parametrize("kernel,n,extra", CASES, ids=[f"{k}-{n}-{''.join(e)}" for k, n, e in CASES])
def test_write_read_verified(job, kernel, n, extra):
    args = SMALL[kernel] + extra
    keep = n < 4  # the 4-rank runs check that the files are removed
    res, p = job.kernel(n, kernel, *args, *(["--keep"] if keep else []))
    assert res["kernel"] == kernel and res["nprocs"] == n
    assert res["verified"] is True and res["errors"] == [], p.stderr
    _, phases = layout(kernel, n, args)
    check_phases(res, phases, phases)
    prm = res["params"]
    assert prm["collective"] == ("--collective" in extra)
    assert (prm["file"], prm["seed"], prm["keep"], prm["skip-write"]) == (f"iotame-{kernel}.h5", 42, keep, False)
    if not keep:
        assert list(job.tmp.iterdir()) == []
        return
    files = check_files(job.tmp, kernel, n, args)
    assert sorted(f.name for f in job.tmp.iterdir()) == files
    if "--chunk-cells" in extra:
        assert "CHUNKED ( 128, 3 )" in h5_properties(job.tmp / files[0], "/cell_var_0")
    if n == 1:  # --skip-write reads and verifies what the --keep run left, and leaves it
        res, _ = job.kernel(n, kernel, *args, "--skip-write")
        assert res["verified"] is True
        assert [ph["name"] for ph in res["phases"]] == [name for name in phases if name.endswith("read")]
        assert sorted(f.name for f in job.tmp.iterdir()) == files


def test_params_and_seed(job):
    res, _ = job.kernel(2, "vorpalio", "--block", "3x2x2", "--components", "1", "--seed", "7", "--keep")
    assert res["params"]["decomposition"] == "2x1x1" and res["params"]["block"] == "3x2x2"
    check_files(job.tmp, "vorpalio", 2, ["--block", "3x2x2", "--components", "1"], seed=7)
    res, _ = job.kernel(2, "flashio", *SMALL["flashio"], "--file", "run.h5", "--keep")
    assert res["params"]["blocks"] == 9 and res["verified"] is True
    assert {"run_chk.h5", "run_plt_cnt.h5", "run_plt_crn.h5"} <= {f.name for f in job.tmp.iterdir()}


# (kernel, file, dataset, element, byte in the element, rank that reads it) with 2 ranks and SMALL sizes
CORRUPT = [
    ("vpicio", "iotame-vpicio.h5", "/Step#1/id2", 1000 + 123, 2, 1),
    ("flashio", "iotame-flashio_chk.h5", "/dens", 5 * 64 + 37, 7, 1),  # blocks 4..8 are rank 1's
    ("flashio", "iotame-flashio_plt_crn.h5", "/temp", 2 * 125 + 10, 1, 0),
    ("vorpalio", "iotame-vorpalio.h5", "/Step#1/field", ((3 * 5 + 4) * 12 + 7) * 3 + 2, 5, 1),  # x >= 6: rank 1
    ("gcrmio", "iotame-gcrmio.h5", "/edge_var_0", (900 + 5) * 7 + 6, 3, 1),  # rows 900.. are rank 1's
]


@pytest.mark.parametrize("kernel,name,dataset,element,byte,finder", CORRUPT,
                         ids=[f"{c[0]}-{c[2]}" for c in CORRUPT])
def test_corruption_is_reported(job, kernel, name, dataset, element, byte, finder):
    args = SMALL[kernel]
    res, _ = job.kernel(2, kernel, *args, "--keep")
    assert res["verified"] is True
    ds, _ = layout(kernel, 2, args)
    size = next(s for f, d, _, s in ds if (f, d) == (name, dataset))
    logical = logical_base(ds, name, dataset) + element * size + byte
    original = pattern(logical, 1)[0]
    offset = h5_offset(job.tmp / name, dataset) + element * size + byte
    assert (job.tmp / name).read_bytes()[offset] == original  # the element is where HDF5 says

    res, p, _ = reread_corrupted(job, 2, kernel, args, job.tmp / name, offset)
    assert res["errors"] == mismatch([finder], f"{name}:{dataset}", logical, original)
    assert f"{name}:{dataset} at offset {logical}" in p.stderr


def test_skip_write_with_other_options_fails(job):
    job.kernel(1, "vpicio", "--particles", "100", "--keep")
    p = job.run(1, [KERNEL, "vpicio", "--particles", "200", "--skip-write"], check=False)
    assert p.returncode == 3 and p.stdout == ""
    assert '"Step#0/x"' in p.stderr and "shape [100], expected [200]" in p.stderr
    p = job.run(1, [KERNEL, "flashio", "--skip-write"], check=False)
    assert p.returncode == 3 and p.stdout == ""
    assert "cannot open iotame-flashio_chk.h5" in p.stderr


@pytest.mark.parametrize("kernel,args,option", [
    ("vpicio", ["--particles", "0"], "--particles"),
    ("vpicio", ["--steps", "two"], "--steps"),
    ("vpicio", ["--collective=yes"], "--collective"),
    ("vpicio", ["--bogus", "1"], "--bogus"),
    ("flashio", ["--nxb", "0"], "--nxb"),
    ("flashio", ["--maxblocks", "1"], "--maxblocks"),
    ("flashio", ["--nguard", "-1"], "--nguard"),
    ("flashio", ["--maxblocks", "1000000", "--nxb", "1024"], "--maxblocks"),
    ("vorpalio", ["--block", "10x10"], "--block"),
    ("vorpalio", ["--block", "10x0x10"], "--block"),
    ("vorpalio", ["--components", "0"], "--components"),
    ("gcrmio", ["--levels", "0"], "--levels"),
    ("gcrmio", ["--cells", "10", "--chunk-cells", "11"], "--chunk-cells"),
    ("gcrmio", ["--chunk-levels", "3"], "--chunk-levels"),
    ("gcrmio", ["--chunk-cells", "8", "--chunk-levels", "26"], "--chunk-levels"),
], ids=lambda v: "".join(v) if isinstance(v, list) else None)
def test_bad_options(job, kernel, args, option):
    line, _ = usage_error(job, 2 if option == "--particles" else 1, kernel, args)
    assert f"option {option}" in line or f"options {option}" in line
    assert list(job.tmp.iterdir()) == []


def test_listed_with_help(job):
    listed = job.run(1, [KERNEL, "--list"]).stdout.split()
    for kernel in SMALL:
        assert kernel in listed
        p = job.run(1, [KERNEL, kernel, "--help"])
        assert p.stdout.startswith(f"usage: iotame-kernel {kernel}")
        for name in ["--file", "--seed", "--keep", "--skip-write", "--collective"]:
            assert name in p.stdout
