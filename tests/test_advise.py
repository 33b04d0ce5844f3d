"""``advise``: recommendations that follow from measurements on the user's function."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import diffkit as dk
from diffkit.bench.targets import find_target
from diffkit.core import DiffkitError


def rosenbrock_gradient(x: np.ndarray) -> np.ndarray:
    """sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, differentiated by hand."""
    r = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


def relative(d: np.ndarray, exact: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(d) - exact)) / np.max(np.abs(exact)))


def assert_errors_are_measured(a: dk.Advice, exact: np.ndarray) -> None:
    """Each measured method's error is its distance to the hand-written derivative."""
    judged = [c for c in a.candidates if c.derivative is not None]
    assert len(judged) >= 5, [c.method for c in judged]
    for c in judged:
        assert c.error == pytest.approx(relative(c.derivative, exact), rel=1e-6, abs=5e-16), \
            c.method
        assert c.error_basis == "against the reference"


def test_many_inputs_one_output_is_reverse_mode_with_its_reasons() -> None:
    a = dk.advise("rosenbrock", n=300, budget_s=120)  # (a busy machine must not skip methods)
    assert (a.n, a.m, a.kind) == (300, 1, "grad")
    assert a.best.method in ("reverse", "compiled")  # both reverse mode; compiled if it pays
    by = {c.method: c for c in a.candidates}
    x = np.asarray(find_target("rosenbrock", n=300).x)
    exact = rosenbrock_gradient(x)
    assert_errors_are_measured(a, exact)
    assert relative(a.best.derivative, exact) < 1e-14
    assert by["reverse"].error < 1e-14 and by["forward"].error < 1e-14
    assert 1e-13 < by["numeric[method=central]"].error < 1e-6  # truncation vs round-off
    assert by["numeric[method=forward]"].error > by["numeric[method=central]"].error
    text = str(a)
    assert "n = 300 inputs and m = 1 output" in text and "cheap-gradient" in text
    assert a.facts["tape_ops"] > 0 and a.facts["tape_bytes"] > 0
    assert json.loads(a.to_json())["best"]["method"] == a.best.method


def test_every_method_is_judged_against_the_closed_form_not_against_ad() -> None:
    """sin(x1) exp(x2): gradient (cos(x1) exp(x2), sin(x1) exp(x2)). An AD rule that were
    1 % off would show here as a 1e-2 error, and AD would not be recommended."""
    a = dk.advise("sin(x1) * exp(x2)", at={"x1": 0.7, "x2": 0.3}, budget_s=120)
    exact = np.array([np.cos(0.7) * np.exp(0.3), np.sin(0.7) * np.exp(0.3)])
    assert_errors_are_measured(a, exact)
    by = {c.method: c for c in a.candidates}
    for way in ("reverse", "forward", "compiled", "symbolic"):
        assert relative(by[way].derivative, exact) < 1e-14, way
    assert 1e-13 < by["numeric[method=central]"].error < 1e-6
    assert a.best.method in ("reverse", "forward", "compiled")  # exact, and cheap at n = 2
    assert relative(a.best.derivative, exact) < 1e-14


def test_without_a_reference_advise_says_the_ad_error_was_not_measured() -> None:
    def looped(x):  # a Python loop on values: no closed form for the reference to read
        import diffkit.numpy as dnp
        y = x
        while dnp.max(dnp.abs(y)) > 0.1:
            y = dnp.sin(y) * 0.5
        return dnp.sum(y * y)

    a = dk.advise(looped, np.array([0.9, -0.4]), budget_s=60)
    if a.facts["reference"].startswith("none"):
        ad = [c for c in a.candidates if c.method == "reverse"][0]
        assert ad.error_basis.startswith("not measured")
        assert "not a measurement" in str(a)
    else:  # the local closed form read it: then it is judged like any other
        assert all(c.error_basis == "against the reference" for c in a.candidates
                   if c.derivative is not None)


def test_a_function_that_raises_is_blamed_in_one_line(capsys, tmp_path: Path) -> None:
    from diffkit_cli.main import main

    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    raise RuntimeError('boom')\n")
    with pytest.raises(SystemExit) as exc:
        main(["advise", f"{bad}:f"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "the function itself failed at x = 1: RuntimeError: boom" in err[0]
    assert "internal error" not in err[0]


def test_a_black_box_gets_finite_differences_and_says_why() -> None:
    def black_box(x):  # float() of a traced value: AD cannot follow it
        return (3.0 * float(x)) ** 2

    a = dk.advise(black_box, 0.7, accuracy=1e-8, budget_s=120)
    assert not a.facts["ad_traceable"] and "float" in a.facts["ad_reason"]
    by = {c.method: c for c in a.candidates}
    assert by["reverse"].status == "n/a" and by["symbolic"].status == "n/a"
    assert a.best.method.startswith("numeric")
    exact = 2 * 9.0 * 0.7  # d/dx (3x)^2
    assert abs(a.best.derivative - exact) <= 1e-8 * exact
    assert "cannot trace f" in str(a)


def test_kinks_noise_and_nothing_meeting_the_target() -> None:
    kinked = dk.advise("abs(x)", at={"x": 1e-9})
    assert kinked.facts["kink_near_x"]
    smooth = dk.advise("sin(x)", at={"x": 1.0})
    assert not smooth.facts["kink_near_x"] and smooth.facts["noise"] < 1e-12
    rng = np.random.default_rng(0)
    noisy = dk.advise(lambda x: x * x + 1e-7 * rng.standard_normal(), 1.0, accuracy=1e-12)
    assert noisy.facts["noise"] > 1e-10
    assert noisy.best is None or noisy.best.error <= 1e-12
    if noisy.best is None:
        assert "No method met --accuracy 1e-12" in str(noisy)


def test_bad_input_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(DiffkitError, match="accuracy > 0"):
        dk.advise("sin(x)", at={"x": 1.0}, accuracy=0.0)
    with pytest.raises(DiffkitError, match="rosenbrok|did you mean"):
        dk.advise("rosenbrok")


def test_cli_prints_the_table_the_recommendation_and_verifies(capsys) -> None:
    from diffkit_cli.main import main

    main(["advise", "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2,x2=5", "--calls", "1", "--verify"])
    out = capsys.readouterr().out
    assert "Recommended:" in out and "Why:" in out and "Verified" in out
    a = dk.advise("log(x1) + x1*x2 - sin(x2)", at={"x1": 2.0, "x2": 5.0}, calls=1, verify=True)
    exact = np.array([1 / 2.0 + 5.0, 2.0 - np.cos(5.0)])
    for v in a.verified:  # the measured error is the distance to the hand-written gradient
        c = next(c for c in a.candidates if c.method == v["method"])
        assert v["status"] == "ok"
        assert v["measured_error"] == pytest.approx(relative(c.derivative, exact), rel=1e-3,
                                                    abs=5e-16)
        assert v["predicted_error"] == pytest.approx(v["measured_error"], rel=1e-3, abs=1e-16)
    main(["advise", "exp", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 1 and data["best"]["error"] <= 1e-8
    best = next(c for c in dk.advise("exp").candidates if c.method == data["best"]["method"])
    assert relative(best.derivative, np.exp(find_target("exp").x)) <= 1e-8
    with pytest.raises(SystemExit) as exc:
        main(["advise", "exp", "--memory", "lots"])
    assert exc.value.code == 2 and "not a size" in capsys.readouterr().err


def test_at_100_columns_every_number_is_printed_whole(monkeypatch) -> None:
    """The table and the sentences wrap between words: each figure of the JSON records
    stands whole on one line of the text, and no line is wider than the terminal."""
    from diffkit.bench.advise import _bytes, _err, _secs
    from diffkit_cli.advise import text

    monkeypatch.setenv("COLUMNS", "100")
    a = dk.advise("rosenbrock", n=1000, verify=True)
    lines = text(a).splitlines()
    assert max(len(line) for line in lines) <= 100
    data = json.loads(a.to_json())
    figures = []
    for c in data["candidates"]:
        figures += [_err(c["error"]), _secs(c["time_s"]), _bytes(c["peak_bytes"])]
        figures += [w for w in (c["size"] or "").split() if w[0].isdigit()]
    for v in data["verified"]:
        figures += [_err(v["measured_error"]), _secs(v["measured_time_s"])]
    figures = [f for f in figures if f != "—"]
    assert len(figures) >= 12
    for figure in figures:
        assert any(re.search(rf"(?<![\w.]){re.escape(figure)}(?![\w.])", line)
                   for line in lines), figure
    whole = "\n".join(lines)
    assert not re.search(r"(?<![\d.])1 calls", whole) and "from 1 evaluation" not in whole


def test_one_input_many_outputs_is_forward_mode() -> None:
    import functools

    from diffkit.bench import catalog

    f = functools.partial(catalog.tanh_ax, m=1000)  # R^1 -> R^1000
    x = np.array([0.5])
    a = dk.advise(f, x, calls=1, budget_s=120)
    assert (a.n, a.m, a.kind) == (1, 1000, "jacobian")
    assert a.best.method == "forward"  # 1 pass against 1000 (timings are benchmarks' business)
    A = catalog._tanh_ax_matrix(1000, 1)
    exact = (1.0 - np.tanh(A @ x) ** 2)[:, None] * A  # d/dx tanh(a x) = a (1 - tanh^2(a x))
    np.testing.assert_allclose(a.best.derivative, exact, rtol=1e-13, atol=0)
    assert "forward mode needs only 1 direction" in str(a)
    for way in ("forward", "reverse"):  # both exact
        np.testing.assert_allclose(dk.jacobian(f, backend=way)(x), exact, rtol=1e-13, atol=0)


def test_compiled_is_weighed_by_its_measured_setup_and_says_when_it_pays() -> None:
    """The decision follows from the measured figures, whatever they are on a loaded machine:
    the break-even is where compiled's cost crosses the cheapest eager way's, the best is the
    cheapest way at the given number of calls, and the text says which."""
    for calls in (1, 10**6):
        a = dk.advise("rosenbrock", n=300, calls=calls, budget_s=120)
        comp = next(c for c in a.candidates if c.method == "compiled")
        assert comp.setup_s > 0 and comp.error < 1e-14  # its build is timed apart from its calls
        fits = [c for c in a.candidates if c.status == "ok" and c.error is not None
                and c.error <= a.accuracy and c.time_s is not None]  # (advise's own filter)
        eager = min((c for c in fits if c.method != "compiled"), key=lambda c: c.time_s)
        pays = a.facts["compiled_pays_after"]
        if comp.time_s >= eager.time_s:  # saves nothing per call: never pays
            assert pays is None
        else:
            assert comp.cost(pays) <= eager.cost(pays)
            assert pays == 1 or comp.cost(pays - 1) > eager.cost(pays - 1)
        if a.best.method == "compiled" and pays is not None:
            assert "pays off after" in str(a)
        elif pays is not None:
            assert f"compiled if you call it more than ~{pays} times" in str(a)
        assert a.best.method in ("reverse", "compiled", "forward")  # exact ways, cost-ranked
