"""``advise``: recommendations that follow from measurements on the user's function."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import diffkit as dk
from diffkit.core import DiffkitError


def test_many_inputs_one_output_is_reverse_mode_with_its_reasons() -> None:
    a = dk.advise("rosenbrock", n=300, budget_s=120)  # (a busy machine must not skip methods)
    assert (a.n, a.m, a.kind) == (300, 1, "grad")
    assert a.best.method in ("reverse", "compiled")  # both reverse mode; compiled if it pays
    by = {c.method: c for c in a.candidates}
    assert by["reverse"].error < 1e-14 and by["forward"].error < 1e-14
    assert 1e-13 < by["numeric:method=central"].error < 1e-6  # truncation vs round-off
    assert by["numeric:method=forward"].error > by["numeric:method=central"].error
    text = str(a)
    assert "n = 300 inputs and m = 1 output" in text and "cheap-gradient" in text
    assert a.facts["tape_ops"] > 0 and a.facts["tape_bytes"] > 0
    assert json.loads(a.to_json())["best"]["method"] == a.best.method


def test_a_black_box_gets_finite_differences_and_says_why() -> None:
    def black_box(x):  # np.interp is not a diffkit function: AD cannot trace it
        return np.interp(x, [0.0, 1.0], [0.0, 3.0]) ** 2

    a = dk.advise(black_box, 0.7, accuracy=1e-8, budget_s=120)
    assert not a.facts["ad_traceable"] and "interp" in a.facts["ad_reason"]
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
    main(["advise", "exp", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert data["best"]["error"] <= 1e-8 and data["n"] == 1
    with pytest.raises(SystemExit) as exc:
        main(["advise", "exp", "--memory", "lots"])
    assert exc.value.code == 2 and "not a size" in capsys.readouterr().err
