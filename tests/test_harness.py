"""The comparison harness: records, isolation of faulty cells, incremental results."""

import json
import time

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench.harness import FIELDS, append_result, read_results
from diffkit.bench.cells import run_isolated
from diffkit.interpreters.counting import tape_length
from diffkit.bench.measure import error_against


def test_compare_records_every_field_with_real_values():
    result = dk.compare("log(x1) + x1*x2 - sin(x2)", at={"x1": 2.0, "x2": 0.5}, repeat=1)
    records = result.records()
    assert [r["backend"] for r in records] == ["symbolic", "numeric", "forward", "reverse",
                                               "compiled"]
    exact = [1 / 2.0 + 0.5, 2.0 - np.cos(0.5)]
    for r in records:
        assert set(FIELDS) <= set(r)
        assert r["status"] == "ok", r
        np.testing.assert_allclose(r["derivative"], exact, rtol=1e-9)
        assert r["time_s"] > 0 and r["peak_bytes"] > 0
    by = {r["backend"]: r for r in records}
    assert by["forward"]["error"] < 1e-15 and by["reverse"]["error"] < 1e-15
    assert by["compiled"]["error"] < 1e-15 and by["compiled"]["graph_eqns"] > 0
    assert 1e-14 < by["numeric"]["error"] < 1e-7 and by["numeric"]["fevals"] >= 4
    assert by["symbolic"]["expr_nodes"] >= by["symbolic"]["expr_dag_nodes"] > 0
    assert by["symbolic"]["setup_s"] > 0
    assert by["reverse"]["tape_ops"] == 7  # v[0], v[1], then log, mul, add, sin, sub
    json.loads(result.to_json())
    assert "reverse" in str(result) and "<table>" in result._repr_html_()


def test_a_hanging_cell_times_out_while_the_others_are_measured():
    def f(x):
        if isinstance(x, dk.Tensor):  # only the reverse backend sees tensors: it hangs
            while True:
                pass
        return dnp.sin(x)

    start = time.perf_counter()
    result = dk.compare(f, 0.5, backends=["forward", "reverse"], timeout=3, repeat=1)
    statuses = {r["backend"]: r["status"] for r in result.records()}
    assert statuses == {"forward": "ok", "reverse": "timeout"}
    assert time.perf_counter() - start < 20


def test_a_memory_bomb_becomes_oom_and_an_exception_becomes_error():
    def bomb(x):
        blocks = [np.ones(10**8) for _ in range(100)]  # 80 GB
        return x * len(blocks)

    r = run_isolated(lambda: {"v": bomb(1.0)}, timeout=30, memory_mb=300)
    assert r["status"] == "oom" and "out of memory" in r["message"]

    def broken(x):
        raise RuntimeError("user code failed")

    result = dk.compare(broken, 1.0, backends=["forward"], repeat=1)
    (row,) = result.records()
    assert row["status"] == "error" and "user code failed" in row["message"]


def test_symbolic_on_control_flow_is_not_applicable_not_a_failure():
    result = dk.compare("babylonian_sqrt", backends=["symbolic", "forward"], repeat=1)
    by = {r["backend"]: r for r in result.records()}
    assert by["symbolic"]["status"] == "n/a" and "closed form" in by["symbolic"]["message"]
    assert by["forward"]["status"] == "ok" and by["forward"]["error"] < 1e-13
    assert result.reference["method"] == "local closed form"


def test_results_resume_after_an_interruption(tmp_path):
    path = tmp_path / "cells.jsonl"
    first = dk.compare("exp", backends=["forward", "reverse", "numeric"], repeat=1, results=path)
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    # an interrupted sweep: one cell finished, the next torn mid-write (power cut)
    path.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    assert len(read_results(path)) == 1
    again = dk.compare("exp", backends=["forward", "reverse", "numeric"], repeat=1, results=path)
    kept = again.records()[0]
    assert kept["time_s"] == first.records()[0]["time_s"]  # reused, not re-measured
    assert [r["status"] for r in again.records()] == ["ok", "ok", "ok"]
    assert len(read_results(path)) == 3
    append_result(path, {"function": "x"})
    assert len(read_results(path)) == 4


def test_error_rule_and_trace_length():
    assert error_against([1.0, 2.0], [1.0, 4.0]) == (0.5, "relative")
    assert error_against([1e-3, 0.0], [0.0, 0.0]) == (1e-3, "absolute")
    assert error_against([np.nan], [1.0])[0] == float("inf")
    assert tape_length(lambda x: dnp.sin(x) * x + 1.0, 0.3) == 3


def test_resume_keys_on_the_point_and_the_reference_can_be_skipped(tmp_path):
    path = tmp_path / "cells.jsonl"
    a = dk.compare("exp", backends=["forward"], repeat=1, results=path)
    b = dk.compare("exp", 2.0, backends=["forward"], repeat=1, results=path, reference=False)
    assert a.records()[0]["derivative"] != b.records()[0]["derivative"]
    assert b.records()[0]["derivative"] == pytest.approx(np.exp(2.0), rel=1e-15)
    assert b.records()[0]["error"] is None and b.reference["message"] == "reference skipped"
    assert len(read_results(path)) == 2
