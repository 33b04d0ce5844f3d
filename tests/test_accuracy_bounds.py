"""Every elementwise primitive meets its stated accuracy bound against mpmath at 50 digits.

The target is 4 ulps for the value and the first derivative and 16 for the second, wherever
the exact result is a normal float. A function that does not meet it states its measured
bound and the reason in the table of ``docs/accuracy.md`` ("Stated bounds"); this test
reads that table and enforces it, so a bound can only get better (and a row whose function
now meets the target should go). The points are every 6th of the 400 that
``diffkit accuracy`` measures (``diffkit.bench.atlas.points``): log-spaced magnitudes of
both signs, a uniform range, points approaching zeros, poles and edges of the domain.
Methods: diffkit's eager reverse and forward modes; with numba, the compiled backend's fused
kernels for the functions whose rules branch (the rest are checked against numpy, bit for
bit or within a stated ulp bound, by tests/test_lowering.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import diffkit.primitives as P
from diffkit.bench import atlas

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)

pytest.importorskip("scipy")

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "accuracy.md").read_text()
TARGET = {"value": 4.0, "d1": 4.0, "d2": 16.0}
EVERY = 6  # every 6th of the 400 points of the atlas


def cells_of(row: str) -> list[str]:
    """A markdown table row's cells (``\\|`` is a pipe inside a cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def stated() -> dict[str, dict[str, float]]:
    """The table "Stated bounds" of docs/accuracy.md: function -> bound per quantity."""
    section = DOC.split("## Stated bounds", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    out = {}
    for row in rows:
        cells = cells_of(row)
        name = cells[0].strip("`")
        out[name] = {q: float(c) if c not in ("", "-") else TARGET[q]
                     for q, c in zip(("value", "d1", "d2"), cells[1:4])}
    return out


BOUNDS = stated()


def bound(name: str) -> dict[str, float]:
    return BOUNDS.get(name, TARGET)


def test_every_elementwise_primitive_is_measured_or_says_why():
    names = {n for n, p in P.table().items() if p.kind == "elementwise"}
    measured = {c.primitive for c in atlas.cases()}
    assert sorted(names - measured - set(atlas.NOT_MEASURED)) == []


def test_every_stated_bound_names_a_function_and_a_reason():
    for name in BOUNDS:
        assert name in atlas.CASES, f"docs/accuracy.md states a bound for {name!r}, not a case"
    section = DOC.split("## Stated bounds", 1)[1].split("\n## ", 1)[0]
    for row in (r for r in section.splitlines() if r.startswith("| `")):
        assert len(cells_of(row)[4]) > 20, f"no reason given: {row}"


_SAMPLES: dict[str, tuple[np.ndarray, dict]] = {}


def sample(case: atlas.Case) -> tuple[np.ndarray, dict]:
    if case.name not in _SAMPLES:
        xs = atlas.points(case, 400)[::EVERY]
        _SAMPLES[case.name] = xs, atlas.reference(case, xs)
    return _SAMPLES[case.name]


def check(case: atlas.Case, methods: tuple[str, ...]) -> list[str]:
    xs, ref = sample(case)
    limit = bound(case.name)
    failures = []
    for r in atlas.measure(case, methods, xs=xs, ref=ref):
        for q in ("value", "d1", "d2"):
            s = r[q]
            if r["note"] and q in r["note"]:
                failures.append(f"{r['method']} {q}: {r['note']}")
            elif s is not None and not s["max"] <= limit[q]:
                failures.append(f"{r['method']} {q}: {s['max']:.3g} ulps at x = {s['x']!r} "
                                f"(stated: {limit[q]:g})")
    return failures


@pytest.mark.parametrize("name", sorted(atlas.CASES))
def test_eager_modes_meet_the_stated_bound(name):
    failures = check(atlas.CASES[name], ("reverse", "forward"))
    assert not failures, f"{name}: " + "; ".join(failures)


# the functions whose rules choose between forms by the value (masks and selects), and those
# whose value is a formula: their fused kernels compute the same forms (tests/test_lowering.py
# checks each formula fused against numpy; here the derivatives, as the compiler traces them)
FUSED = ("sigmoid", "tanh", "expm1", "erf", "erfc", "log_ndtr", "logaddexp(x, 0)",
         "logaddexp2(x, 0)", "arcsin", "arctanh", "arcsinh", "arccosh", "arctan2(x, 1.5)",
         "erfcx", "erfinv", "ndtri", "gammainc(2.5, x)", "gammaincc(2.5, x)",
         "betainc(0.5, 2.5, x)", "ive(1, x)", "i0e")


@pytest.mark.jit
@pytest.mark.parametrize("name", FUSED)
def test_fused_kernels_meet_the_stated_bound(name, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DIFFKIT_CACHE", str(tmp_path_factory.getbasetemp() / "diffkit-cache"))
    failures = check(atlas.CASES[name], ("compiled",))
    assert not failures, f"{name}: " + "; ".join(failures)


def test_sigmoid_log_gradient_far_left():
    """The issue's example: log(sigmoid(-40)) and its gradient (NaN with 0.5 tanh(x/2) + 0.5)."""
    import diffkit as dk
    import diffkit.numpy as dnp

    g = dk.grad(lambda x: dnp.sum(dnp.log(dnp.sigmoid(x))))(np.array([-40.0, -700.0, 30.0]))
    np.testing.assert_allclose(g, [1.0, 1.0, 1.0 / (1.0 + np.exp(30.0))], rtol=1e-15)
    h = dk.hessian(lambda x: dnp.sum(dnp.log(dnp.sigmoid(x))))(np.array([-3.0, 0.0]))
    np.testing.assert_allclose(np.diag(h), [-np.exp(-3.0) / (1 + np.exp(-3.0)) ** 2, -0.25],
                               rtol=1e-14)


def test_the_documented_table_is_the_scripts_output():
    """docs/accuracy.md's summary table names the command that prints it."""
    assert "python -m diffkit.bench.atlas --markdown" in DOC
    assert re.search(r"^\| function \| diffkit reverse", DOC, re.MULTILINE)
