"""The sweep plot, drawn from fake results, with and without a stored fio limit."""
import json

from iotame.bench import RUNTIME_ROW, load_fio, plot_sweep, save_fio

PNG = b"\x89PNG\r\n\x1a\n"


def rows():
    out = []
    for t, base in (("64k", 100.0), ("256k", 200.0), ("1m", 300.0)):
        for name, factor in (("write", 1), ("read", 2), (RUNTIME_ROW, 3)):
            m = base * factor
            out.append({"point": {"t": t}, "name": name, "runs": 3, "median": m, "min": m * 0.9, "max": m * 1.2})
    return out


def fio_result():
    return {"tool": "fio", "results": [
        {"name": "seq-write-1m", "label": "seq write 1 MiB", "mbs": 900.0},
        {"name": "seq-read-1m", "label": "seq read 1 MiB", "mbs": 1500.0},
        {"name": "rand-read-4k", "label": "rand read 4 KiB", "mbs": 40.0}]}


def test_plot_of_a_sweep_is_a_png(tmp_path):
    path = plot_sweep(rows(), [("t", ["64k", "256k", "1m"])], tmp_path / "sweep.png", title="ior, 2 ranks")
    data = path.read_bytes()
    assert path == tmp_path / "sweep.png" and data[:8] == PNG and len(data) > 1000


def test_plot_draws_the_stored_fio_limit(tmp_path):
    assert load_fio(tmp_path) is None
    save_fio(fio_result(), tmp_path)
    fio = load_fio(tmp_path)
    assert [r["mbs"] for r in fio["results"]] == [900.0, 1500.0, 40.0]
    plain = plot_sweep(rows(), [("t", ["64k", "256k", "1m"])], tmp_path / "a.png")
    limit = plot_sweep(rows(), [("t", ["64k", "256k", "1m"])], tmp_path / "b.png", fio=fio)
    assert limit.read_bytes()[:8] == PNG and limit.read_bytes() != plain.read_bytes()


def test_plot_of_two_swept_keys_and_missing_points(tmp_path):
    two = [{"point": {"t": t, "F": f}, "name": "write", "runs": 1, "median": 5.0, "min": 5.0, "max": 5.0}
           for t in ("64k", "1m") for f in ("0", "1") if (t, f) != ("1m", "1")]     # one point failed
    path = plot_sweep(two, [("t", ["64k", "1m"]), ("F", ["0", "1"])], tmp_path / "two.png")
    assert path.read_bytes()[:8] == PNG


def test_load_fio_ignores_what_is_not_a_fio_result(tmp_path):
    (tmp_path / "fio.json").write_text("{broken")
    assert load_fio(tmp_path) is None
    (tmp_path / "fio.json").write_text(json.dumps({"results": "no"}))
    assert load_fio(tmp_path) is None
    assert load_fio(None) is None
