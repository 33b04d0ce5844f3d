"""Honest results: no `ok` beside a non-finite number, exit codes as documented, the
complex step judged safe or unsafe by f (not by the step), fast references at n = 1000."""

import json
import math
import time

import numpy as np
import pytest

import diffkit as dk
from diffkit.backends import finite_diff as fd
from diffkit.bench import catalog
from diffkit.bench.reference import reference
from test_cli import run


# ------------------------------------------------------------------ statuses and messages


@pytest.mark.parametrize("formula, at, status, fragment", [
    ("log(x)", "x=-1", "domain", "f(-1) is nan: log(-1) is nan (log needs x > 0)"),
    ("sqrt(x)", "x=0", "nonfinite", "sqrt's derivative is inf at 0"),
    ("x^2", "x=nan", "domain", "the point nan is not finite"),
    ("sin(x)", "x=1e999999999999", "domain", "the point inf is not finite"),
])
def test_meaningless_numbers_are_never_ok(capsys, formula, at, status, fragment):
    code, out, err = run(capsys, "compare", formula, "--at", at, "--repeat", "1", "--format",
                         "json")
    assert code == 1, err
    rows = json.loads(out)
    assert {r["status"] for r in rows} == {status}
    assert all(fragment in r["message"] for r in rows), rows[0]["message"]


def test_a_domain_error_reads_as_one_note_and_a_clean_title(capsys):
    code, out, _ = run(capsys, "compare", "log(x)", "--at", "x=-1", "--backends",
                       "forward,reverse", "--repeat", "1")
    assert code == 1
    assert "all backends: f(-1) is nan: log(-1) is nan (log needs x > 0)" in out
    assert "None" not in out and "TypeError" not in out


def test_every_cell_failing_exits_1_and_all_ok_exits_0(capsys, tmp_path):
    bad = tmp_path / "bad_func.py"
    bad.write_text("def f(x):\n    raise RuntimeError('boom')\n")
    code, out, _ = run(capsys, "compare", f"{bad}:f", "--backends", "forward,reverse",
                       "--repeat", "1", "--format", "json")
    assert code == 1 and {r["status"] for r in json.loads(out)} == {"error"}
    code, out, _ = run(capsys, "compare", "sin(x)", "--at", "x=1", "--backends",
                       "forward,reverse", "--repeat", "1", "--format", "json")
    assert code == 0
    for r in json.loads(out):
        assert r["status"] == "ok" and abs(r["derivative"] - math.cos(1)) < 1e-15


def test_not_applicable_is_not_a_failure(capsys):
    code, out, _ = run(capsys, "compare", "abs(x)", "--at", "x=0.5", "--backends",
                       "reverse,numeric[method=complex]", "--repeat", "1", "--format", "json")
    rows = {r["backend"]: r for r in json.loads(out)}
    assert rows["numeric[method=complex]"]["status"] == "n/a"
    assert code == 0


def test_an_omitted_point_is_named(capsys):
    code, out, _ = run(capsys, "compare", "rosenbrock", "--backends", "reverse", "--repeat", "1")
    assert code == 0
    assert "at x = [-1.2, 1]; the default point" in out
    assert "[-215.6, -88]" in out  # the gradient itself: 2(x-1) - 400x(y-x²), 200(y-x²)


def test_a_failed_reference_is_a_sentence():
    from diffkit.bench.harness import _as_sentence

    assert _as_sentence({"status": "timeout", "message": "no result within 2 s"}, 2.0) == \
        {"method": None, "message": "no reference (it took longer than 2 s)"}
    said = _as_sentence({"status": "error", "message": "RecursionError: too deep"}, 60)
    assert said["message"] == "no reference (too deep)"


def test_a_missing_reference_is_not_a_nan():
    """A cell judged without a reference (it timed out) keeps its finite answer: the
    missing derivative is not read as NaN ("the exact derivative ... is nan")."""
    from diffkit.bench.verdict import judge

    row = {"status": "ok", "value": 1.0, "derivative": [2.0, -1.0]}
    ref = {"method": None, "message": "no reference (it took longer than 2 s)"}
    assert judge(row, np.array([1.0, 2.0]), ref, lambda d: "") == row
    nan_row = {**row, "derivative": [2.0, np.nan]}
    assert judge(nan_row, np.array([1.0, 2.0]), ref, lambda d: "")["status"] == "nonfinite"


# ------------------------------------------------------------------ fail before measuring


@pytest.mark.parametrize("option", ["-o", "--results"])
def test_an_unwritable_path_fails_before_any_cell_runs(capsys, monkeypatch, option):
    import diffkit.bench.harness as harness

    monkeypatch.setattr(harness, "run_isolated", lambda *a, **k: pytest.fail("measured"))
    code, _, err = run(capsys, "compare", "sin(x)", option, "/nonexistent/a/b.txt")
    assert code == 2
    assert "cannot write /nonexistent/a/b.txt: no such folder /nonexistent/a" in err


def test_a_report_spec_with_an_unknown_function_is_an_error(tmp_path):
    from diffkit.core import DiffkitError
    from diffkit.reporting.spec import load_spec

    with pytest.raises(DiffkitError, match="did you mean rosenbrock"):
        load_spec({"functions": ["rosenbrok"], "figures": ["swell"]})


# ------------------------------------------------------------------ one option syntax


def test_backend_options_in_brackets_and_full_labels(capsys):
    code, out, _ = run(capsys, "compare", "sin(x)", "--at", "x=1", "--backends",
                       "numeric[method=central,order=4],forward", "--repeat", "1")
    assert code == 0
    assert "numeric[method=central,order=4]" in out.replace("\n", "")  # may fold in a cell
    code, _, err = run(capsys, "compare", "sin(x)", "--backends", "numeric[order=3]")
    assert code == 2 and "bad order 3" in err


# ------------------------------------------------------------------ complex-step safety


def rosenbrock(v):
    return np.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2)


def rosenbrock_grad(v):
    g = np.zeros_like(v)
    g[:-1] = -400.0 * v[:-1] * (v[1:] - v[:-1] ** 2) - 2.0 * (1.0 - v[:-1])
    g[1:] += 200.0 * (v[1:] - v[:-1] ** 2)
    return g


@pytest.mark.parametrize("h", [None, 1e-1, 1e-2, 1e-3, 1e-8])
@pytest.mark.parametrize("f, df, x", [(np.sin, np.cos, 1.0), (np.exp, np.exp, 0.3)])
def test_complex_step_is_safe_on_analytic_functions_at_every_step(f, df, x, h):
    r = fd.estimate_derivative(f, x, method="complex", step=h)
    truncation = (h or 0) ** 2 * abs(df(x)) / 6 * 1.01  # Im f(x+ih)/h = f' - h² f'''/6 + …
    assert abs(r.value - df(x)) <= truncation + 1e-15


@pytest.mark.parametrize("h", [None, 1e-1, 1e-3])
def test_complex_step_is_safe_on_rosenbrock(h):
    x = np.array([-1.2, 1.0, 0.5])
    r = fd.estimate_gradient(rosenbrock, x, method="complex", step=h)
    exact = rosenbrock_grad(x)
    assert np.max(abs(r.value - exact)) / np.max(abs(exact)) < (1e-15 if h is None else h)


@pytest.mark.parametrize("h", [None, 1e-1, 1e-3])
@pytest.mark.parametrize("f", [np.abs, lambda x: x * np.abs(x), np.conj,
                               lambda x: x * np.conj(x)])
def test_complex_step_rejects_non_analytic_code_at_every_step(f, h):
    with pytest.raises(fd.ComplexStepError, match="not complex-step safe"):
        fd.estimate_derivative(f, 0.7, method="complex", step=h)


def test_steps_of_sin_have_no_unsafe_complex_rows(capsys):
    code, out, _ = run(capsys, "steps", "sin(x)", "--at", "x=1", "--methods", "complex",
                       "--format", "json")
    rows = json.loads(out)
    assert code == 0 and all(r.get("message") is None for r in rows)
    big = next(r for r in rows if r["step"] == 0.1)
    # Im sin(1 + 0.1i) / 0.1 = cos(1) sinh(0.1) / 0.1: relative error sinh(0.1)/0.1 - 1
    assert big["error"] == pytest.approx(math.sinh(0.1) / 0.1 - 1, rel=1e-6)


# ------------------------------------------------------------------ fast references


def test_reference_gradient_of_rosenbrock_at_n_1000_is_fast_and_exact():
    f, x = catalog.get("rosenbrock").make(n=1000)
    start = time.process_time()
    ref = reference(f, x, "grad")
    assert time.process_time() - start < 30  # minutes before the adjoint sweep
    assert ref.method == "closed form"
    np.testing.assert_allclose(ref.derivative, rosenbrock_grad(np.asarray(x)), rtol=1e-15,
                               atol=1e-12)


@pytest.mark.parametrize("name", ["ackley", "rastrigin", "griewank", "speelpenning",
                                  "styblinski_tang", "sum_of_squares"])
def test_adjoint_sweep_agrees_with_sympy_diff(name, monkeypatch):
    import diffkit.bench.reference as R

    f, x = catalog.get(name).make(n=20)
    fast = reference(f, x, "grad").derivative
    monkeypatch.setattr(R, "ADJOINT_FROM", 10**9)
    slow = reference(f, x, "grad").derivative
    np.testing.assert_allclose(fast, slow, rtol=1e-14, atol=1e-300)
