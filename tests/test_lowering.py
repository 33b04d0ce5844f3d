"""The lowering registry, generated from the primitive table: every elementwise primitive
computed fused (through LLVM IR and through Numba) equals numpy's own value, bit for bit,
or within the registry's documented ulp bound where numpy computes the function with its
own vectorized routine (see ``diffkit.primitives.lowering.SIMD_ULPS``).

References are numpy itself: the primitive's implementation called on the arrays (numpy's
own ufunc for the elementary functions the eager primitives round once in long double), and
the unfused compiled program (numpy calls). Points: a few thousand per primitive, inside its
domain and at the edges (zeros of both signs, infinities, NaN, huge and tiny numbers).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import diffkit as dk
import diffkit.primitives as P
from diffkit.compiler import driver
from diffkit.primitives import compare
from diffkit.primitives.lowering import SIMD_ULPS, Lowering

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)

COMPARISONS = ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal")
EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-310, -1e-310, 1e-300, 1e300,
                  -1e300, 710.0, -745.5, np.inf, -np.inf, np.nan])


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Kernels of these tests go to a private cache folder, not the user's."""
    monkeypatch.setenv("DIFFKIT_CACHE", str(tmp_path_factory.getbasetemp() / "diffkit-cache"))


def primitive(name: str):
    return P.table().get(name) or getattr(compare, name)


def elementwise() -> list[str]:
    """The table's elementwise primitives (their ``kind``), the comparisons and select."""
    names = {n for n, p in P.table().items() if p.kind == "elementwise"}
    return sorted(names | set(COMPARISONS) | {"select"})


def lowered() -> list[str]:
    """The elementwise primitives whose entry has a scalar formula."""
    return [n for n in elementwise() if isinstance(primitive(n).lower, Lowering)]


def test_every_elementwise_primitive_has_a_lowering_or_a_reason():
    missing = [n for n in elementwise() if not isinstance(primitive(n).lower, (Lowering, str))]
    assert missing == [], f"neither a lowering nor a reason not to: {missing}"
    others = [n for n, p in P.table().items() if p.kind != "elementwise" and p.lower is not None]
    assert others == [], f"a lowering on a primitive that is not elementwise: {others}"


# ---------------------------------------------------------------- points per primitive

DOMAINS = {"log": (1e-3, 50.0), "sqrt": (0.0, 50.0), "log1p": (-0.99, 20.0),
           "arcsin": (-1.0, 1.0), "arccos": (-1.0, 1.0), "arctanh": (-1.0, 1.0),
           "arccosh": (1.0, 20.0), "tan": (-1.5, 1.5), "exp": (-30.0, 30.0),
           "sigmoid": (-40.0, 40.0), "floor": (-50.0, 50.0), "ceil": (-50.0, 50.0),
           "rint": (-50.0, 50.0)}


def operands(name: str, n: int = 3000) -> list[np.ndarray]:
    """Random points in the domain (uniform, then the edges), one array per operand; binary
    primitives also meet every pair of edge values."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arity = 3 if name == "select" else 2 if name in COMPARISONS else len(primitive(name).vjp)
    lo, hi = DOMAINS.get(name, (-8.0, 8.0))
    if arity == 1:
        return [np.concatenate([rng.uniform(lo, hi, n), EDGES])]
    grid = np.array(list(itertools.product(EDGES, repeat=2))).T
    xs = [np.concatenate([rng.uniform(lo, hi, n), grid[k]]) for k in range(2)]
    if name in ("power", "logaddexp", "logaddexp2", "hypot"):  # ties and near ties
        xs[1][: n // 4] = xs[0][: n // 4] * rng.choice([1.0, -1.0, 1.0 + 2e-16], n // 4)
    if name == "power":
        xs[0][: n // 2] = np.abs(xs[0][: n // 2])
    if name == "select":  # (its condition: a mask computed in the program, c > 0)
        return [rng.uniform(-1.0, 1.0, xs[0].size), *xs]
    return xs


def applied(name: str):
    """The primitive as a function of arrays (select's condition is ``c > 0``)."""
    prim = primitive(name)
    if name == "select":
        return lambda c, a, b: prim(compare.greater(c, 0.0), a, b)
    return lambda *xs: prim(*xs)


def run(name: str, xs: list[np.ndarray], fuse: bool, monkeypatch: pytest.MonkeyPatch,
        numba: bool = False) -> tuple[np.ndarray, str]:
    """The primitive compiled over ``xs`` (fused, on the Numba route if ``numba``, or
    unfused), and the program's fusion report."""
    with monkeypatch.context() as m:
        if numba:
            m.setattr(driver, "lower", lambda *a, **k: None)
        f = dk.jit(applied(name), fuse=fuse)
        with np.errstate(all="ignore"):
            out = f(*xs)
        return out, f.program(*xs).fusion


def assert_same(got: np.ndarray, want: np.ndarray, ulps: int, what: str,
                at_least: float = 0.0) -> None:
    """NaN where numpy has NaN; elsewhere the same bits (``ulps == 0``: -0.0 apart from
    0.0 too) or at most ``ulps`` units in the last place of numpy's value (of
    ``at_least`` where that is larger) apart."""
    assert got.dtype == want.dtype, what
    nan = np.isnan(want) if want.dtype.kind == "f" else np.zeros(want.shape, bool)
    np.testing.assert_array_equal(np.isnan(got) if got.dtype.kind == "f" else nan, nan,
                                  err_msg=what)
    g, w = got[~nan], want[~nan]
    if want.dtype.kind != "f":
        bad = np.flatnonzero(g != w)
    elif ulps == 0:
        bad = np.flatnonzero((g != w) | (np.signbit(g) != np.signbit(w)))
    else:
        finite = np.isfinite(w)
        scale = np.spacing(np.maximum(np.abs(np.where(finite, w, 0.0)), at_least))
        with np.errstate(invalid="ignore"):  # (inf - inf where both are inf: no error)
            bad = np.flatnonzero(np.where(finite, np.abs(g - w) > ulps * scale, g != w))
    assert bad.size == 0, (f"{what}: {bad.size} of {g.size} points differ, e.g. "
                           f"{g[bad[:3]].tolist()} for numpy's {w[bad[:3]].tolist()}")


def numpys(name: str) -> Callable:
    """What generated numpy code computes for a primitive: numpy's own ufunc where the eager
    primitive rounds it once in long double instead (``extended.rounded``; ``x ** y``), else
    the primitive's implementation."""
    impl = primitive(name).impl
    return np.power if name == "power" else getattr(impl, "__wrapped__", impl)


def test_eager_rounding_is_the_only_difference_from_numpy():
    """The primitives that ``numpys`` swaps are the rounded-once elementary functions."""
    swapped = sorted(n for n in lowered() if numpys(n) is not primitive(n).impl)
    assert {"exp", "tanh", "power", "arctan2", "logaddexp"} <= set(swapped)
    for n in swapped:
        assert numpys(n) is getattr(np, n), n


@pytest.mark.jit
@pytest.mark.parametrize("name", lowered())
def test_fused_equals_numpy(name, monkeypatch):
    xs = operands(name)
    with np.errstate(all="ignore"):
        want = np.asarray(numpys(name)(*([xs[0] > 0.0, *xs[1:]] if name == "select" else xs)))
    unfused, report = run(name, xs, False, monkeypatch)
    assert report == ""
    assert_same(unfused, want, 0, f"{name} unfused")
    rule = primitive(name).lower
    ulps = rule.ulps
    for numba, route in ((False, "[llvm]"), (True, "[numba]")):
        got, report = run(name, xs, True, monkeypatch, numba)
        assert report.endswith(route), report
        assert_same(got, want, ulps, f"{name} fused {route}", rule.at_least)


@pytest.mark.jit
@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -1, -1.0, 3, 1.5, -0.5, 0])
def test_a_literal_exponent_takes_numpys_shortcut(exponent, monkeypatch):
    """``x ** 2`` is numpy's square, ``x ** 0.5`` its sqrt, ``x ** -1`` its reciprocal:
    bit for bit; other exponents call pow (within its bound)."""
    x = np.concatenate([np.random.default_rng(5).uniform(-9.0, 9.0, 3000), EDGES])
    with np.errstate(all="ignore"):
        want = x ** exponent
    ulps = 0 if exponent in (2, 0.5, -1, 0) else SIMD_ULPS["pow"]
    for numba in (False, True):
        with monkeypatch.context() as m:
            if numba:
                m.setattr(driver, "lower", lambda *a, **k: None)
            f = dk.jit(lambda x: x ** exponent)
            with np.errstate(all="ignore"):
                assert_same(f(x), want, ulps, f"x ** {exponent!r}")
            assert f.program(x).fusion.endswith("[numba]" if numba else "[llvm]")


@pytest.mark.jit
@pytest.mark.parametrize("name", ["rsqrt", "cbrt"])
def test_the_refined_formulas_round_once(name, monkeypatch):
    """Fused ``x ** -0.5`` (1 / sqrt(x) corrected by exact remainders) and ``cbrt`` (the C
    library's and one Newton step with the exact remainder) within half an ulp of mpmath
    (plus 0.01) over the whole range, subnormal and huge numbers included, both routes; at
    the edges (0, -0, infinities, NaN, negative numbers) numpy's values."""
    import mpmath

    rng = np.random.default_rng(7)
    x = 2.0 ** rng.uniform(-1074.0, 1023.9, 2000)
    if name == "cbrt":
        x *= rng.choice([-1.0, 1.0], x.size)
    f, exact = ((lambda v: v ** -0.5, lambda v: 1 / mpmath.sqrt(v)) if name == "rsqrt"
                else (P.cbrt, lambda v: mpmath.sign(v) * mpmath.cbrt(abs(v))))
    with mpmath.workdps(40):
        ref = [exact(mpmath.mpf(float(v))) for v in x]
        hi = np.array([float(r) for r in ref])
        lo = np.array([float(r - float(r)) for r in ref])
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -4.0, 8.0, 5e-324])
    for numba in (False, True):
        with monkeypatch.context() as m:
            if numba:
                m.setattr(driver, "lower", lambda *a, **k: None)
            fused = dk.jit(f)
            err = np.abs((fused(x) - hi) - lo) / np.spacing(np.abs(hi))
            assert err.max() <= 0.51, (name, numba, err.max(), x[np.argmax(err)])
            with np.errstate(all="ignore"):
                assert_same(fused(edges), np.asarray(f(edges)), 1, f"{name} edges")
            assert fused.program(x).fusion.endswith("[numba]" if numba else "[llvm]")


# ---------------------------------------------------------------- diffkit rules NAME


def test_rules_shows_each_target_and_its_lines_compute_numpys_value(capsys):
    import math

    from test_cli import run

    code, out, _ = run(capsys, "rules", "sigmoid")
    assert code == 0 and ("scalar formula: div(select(greater_equal(x0, 0.0), 1.0, "
                          "exp(neg(fabs(x0)))), add(1.0, exp(neg(fabs(x0)))))") in out
    assert "numpy (unfused program): sigmoid(x0), its implementation" in out
    assert "fused kernel, LLVM route (float64): inline arithmetic, calls @dk_exp" in out
    assert "  r6 = exp(r5)" in out and "within 3 ulps" in out
    line = out.split("plain floats (and Numba on float64): ")[1].splitlines()[0]
    for x0 in (-40.0, -3.0, 0.25, 7.5):  # the printed formula is what numpy computes (its bound)
        got = eval(line, {"math": math, "np": np, "x0": x0})  # noqa: S307 (our own output)
        want = P.sigmoid(x0)
        assert abs(got - want) <= 3 * np.spacing(want)
    code, out, _ = run(capsys, "rules", "power")
    assert "scalar formula: pow(x0, x1)" in out and "numpy (unfused program): x0 ** x1" in out
    assert "calls @llvm.pow.f64" in out and "  r2 = pow(r0, r1)" in out
    code, out, _ = run(capsys, "rules", "mod")
    assert out.count("fmod(r0, r1)") == 1 and "bit for bit" in out  # m computed once
    code, out, _ = run(capsys, "rules", "erf")
    assert code == 0 and "not in fused kernels nor on the tape VM: diffkit's own routine" in out
    code, out, _ = run(capsys, "rules", "gammaln")
    assert code == 0 and "not in fused kernels nor on the tape VM: scipy.special's" in out
    code, out, _ = run(capsys, "rules", "matmul")
    assert code == 0 and "not in fused kernels nor on the tape VM: not elementwise" in out
    assert "numpy (unfused program and between kernels): x0 @ x1, where its operands'" in out
    code, out, _ = run(capsys, "rules", "reshape")
    assert "x0.reshape(shape)" in out and "not elementwise" in out
    code, out, _ = run(capsys, "rules", "getitem")
    assert "x0[idx]" in out and "in fused kernels: an index map" in out


def test_the_entry_docs_architecture_shows_is_the_tables():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "architecture.md").read_text()
    entries = " ".join((root / "diffkit" / "primitives" / "elementwise.py").read_text().split())
    formulas = " ".join((root / "diffkit" / "primitives" / "lowering.py").read_text().split())
    field = re.search(r"```python\n( *lower=low\.Lowering\(low\.sigmoid.*?)```", doc,
                      re.DOTALL).group(1)
    assert " ".join(field.split()) in entries
    helper = re.search(r"```python\n(def sigmoid.*?)```", doc, re.DOTALL).group(1)
    for line in helper.strip().splitlines():  # the formula the doc shows, line by line
        assert " ".join(line.split()) in formulas
    assert 'lower=low.libm("expm1")' in entries and 'lower=low.libm("expm1")' in doc
