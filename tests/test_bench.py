"""Smoke tests of the benchmark harness: it runs with tiny repeat counts and its JSON has the
documented structure. Nothing here asserts anything about speed."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import hookgrad._bench as bench
except ImportError:  # a checkout that is not installed
    sys.path.insert(0, os.path.join(ROOT, "src"))
    import hookgrad._bench as bench

STATUSES = {"ok", "unavailable", "mismatch", "error"}


def _run_json(capsys, argv):
    rc = bench.main(argv + ["--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def _check_ok_workload(w):
    variants = w["variants"]
    assert variants and set(w["times"]) == {"subject", "baseline"}
    for side in ("subject", "baseline"):
        for v in variants:
            t = w["times"][side][v]
            assert t["median"] > 0 and t["q25"] <= t["median"] <= t["q75"]
    r = w["ratio"]
    assert r["q25"] <= r["median"] <= r["q75"] and r["iqr"] >= 0
    assert w["pass"] in (True, False, None)
    if len(variants) > 1:
        assert set(w["own_overhead"]) == {"subject", "baseline"}


def test_hookgrad_vs_torch_structure(capsys):
    names = ["mlp_forward_tensor_hooks", "elementwise", "module_call"]
    rc, rep = _run_json(capsys, ["--quick", "--repeats", "2", "--only", ",".join(names),
                                 "--threads", "default"])
    assert rc in (0, 1)
    assert rep["subject"] == "hookgrad" and rep["baseline"] == "torch"
    for key in ("cpu", "logical_cpus", "numpy", "numpy_blas", "python", "torch_num_threads"):
        assert key in rep["machine"]
    assert rep["settings"]["repeats"] == 2
    assert [w["name"] for w in rep["workloads"]] == names
    for w in rep["workloads"]:
        assert w["status"] in STATUSES
        if w["status"] == "ok":
            _check_ok_workload(w)
            # twice the rounds where the verdict is a hook overhead
            assert len(w["samples"]["subject"][w["variants"][0]]) == (4 if w["own_overhead_target"] else 2)
            if w["name"] == "mlp_forward_tensor_hooks":
                assert w["own_overhead_target"] == 1.10
                assert w["check"]["subject"][-1] == w["check"]["baseline"][-1] == 6  # hook calls
                assert "own hook overhead" in bench.format_report(rep)
        else:
            assert w["reason"]
    assert "workload" in bench.format_report(rep)


def test_timing_path_with_torch_on_both_sides(capsys):
    # torch against itself exercises the whole timing path whatever state hookgrad is in
    rc, rep = _run_json(capsys, ["--quick", "--repeats", "3", "--only", "4,9",
                                 "--subject", "torch", "--threads", "default"])
    assert rc == 0
    for w in rep["workloads"]:
        assert w["status"] == "ok", w.get("reason")
        _check_ok_workload(w)
        assert w["check"]["subject"] == pytest.approx(w["check"]["baseline"], rel=1e-5)
    ew, call = rep["workloads"]
    assert ew["target"] == 1.2 and ew["pass"] in (True, False)
    assert call["variants"] == ["call", "forward"] and call["pass"] is None
    assert "per call" in bench.format_report(rep)


def test_two_tables_one_thread_first(capsys):
    import torch
    import hookgrad
    before = (torch.get_num_threads(), hookgrad.get_num_threads())
    rc, rep = _run_json(capsys, ["--quick", "--repeats", "1", "--only", "module_call"])
    assert rc == 0
    one, default = rep["tables"]
    assert one["settings"]["threads"] == "one" and default["settings"]["threads"] == "default"
    assert one["threads_in_use"] == {"subject": 1, "baseline": 1}
    assert one["machine"]["torch_num_threads"] == 1
    assert default["threads_in_use"] == {"subject": before[1], "baseline": before[0]}
    assert (torch.get_num_threads(), hookgrad.get_num_threads()) == before  # put back
    text = bench.format_report(one)
    assert "ONE THREAD EACH" in text and "both libraries set to one thread" in text


@pytest.mark.parametrize("name", ["block_mha", "block_manual"])
def test_transformer_blocks_compute_the_same_on_both(name):
    import torch
    import hookgrad
    w = bench.select([name])[0]
    assert w.target == 1.1
    ws = bench._WeightStore()
    got, want = w.build(hookgrad, ws).check(), w.build(torch, ws).check()
    assert got == pytest.approx(want, rel=2e-3, abs=1e-4)


def test_unknown_workload_is_refused():
    with pytest.raises(SystemExit):
        bench.main(["--only", "no_such_workload"])


def test_memory_script_json():
    # hookgrad on both sides keeps the two child processes light (no torch import)
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "memory.py"), "--baseline", "hookgrad",
         "--steps", "3", "--mark", "1", "--json"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert len(rep["results"]) == 2
    for r in rep["results"]:
        assert r["status"] == "ok"
        assert r["steps"] == 3 and r["baseline_kib"] > 0 and r["peak_delta_kib"] >= 0
        assert "growth_kib" in r
    assert rep.get("peak_delta_ratio", 1.0) > 0


def test_scaling_table_and_plot(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "SCALING_CNN_BATCHES", (1, 2))
    png = tmp_path / "img" / "scaling.png"
    rc = bench.main(["scaling", "--quick", "--only", "cnn", "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "one thread each" in out and out.count("CNN ") == 2
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_scaling_grid_covers_the_issue_ranges():
    points = bench.scaling_workloads()
    mlp = {(b, w) for f, b, w, _ in points if f == "mlp"}
    cnn = {b for f, b, _, _ in points if f == "cnn"}
    assert min(b for b, _ in mlp) == 1 and max(b for b, _ in mlp) == 1024
    assert min(w for _, w in mlp) == 64 and max(w for _, w in mlp) == 4096
    assert min(cnn) == 1 and max(cnn) == 256


def test_persample_part_runs_against_opacus(capsys):
    pytest.importorskip("opacus")
    rc = bench.main(["persample", "--quick", "--threads", "one", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [w["name"] for w in rep["workloads"]] == ["persample_mlp", "persample_cnn"]
    for w in rep["workloads"]:
        assert w["status"] == "ok", w.get("reason")   # the pre-timing check: same per-sample gradients
        assert w["target"] == 1.5
        _check_ok_workload(w)


@pytest.mark.parametrize("name", ["conv3d", "interpolate", "lstm_packed"])
def test_new_layer_workloads_compute_the_same_on_both(name):
    import torch
    import hookgrad
    w = bench.select([name])[0]
    assert w.target == 1.5
    ws = bench._WeightStore()
    got, want = w.build(hookgrad, ws).check(), w.build(torch, ws).check()
    assert got == pytest.approx(want, rel=2e-3, abs=1e-4)
