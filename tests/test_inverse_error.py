"""diffkit's own erfinv, erfcinv, ndtri and log_ndtr (``diffkit/primitives/inverse_error.py``)
against mpmath at 50 digits.

Each function on a dense sample of its whole domain: uniform points, log-spaced magnitudes
(to subnormal arguments: erfcinv and ndtri of 5e-324 are normal numbers), the ends of the
domain approached a few ulps at a time and log-spaced (1 − 10^-k), and both sides of every
seam between the pieces (where a form starts, where the start crosses a seam of erf's or
erfcx's pairs, the binades of the tail's start), a few ulps and a relative 1e-12 .. 1e-4
away. The error is ``|got − exact| / ulp(exact)`` (``diffkit.bench.atlas.ulps``) where the
exact result is a normal float. Then the edge values (SciPy's), dtypes, the tables against
their generator, and the functions and their derivatives with SciPy out of reach.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_own_value_within

import diffkit as dk
import diffkit.numpy as dnp
import diffkit.scipy.special as dsp
from diffkit.primitives import inverse_error as ie
from diffkit.primitives import inverse_error_tables as stored

mpmath = pytest.importorskip("mpmath")

mp = mpmath.mp
NAMES = ("erfinv", "erfcinv", "ndtri", "log_ndtr")
# ulps, each function (measured over these points: 0.52 each; over 75,000 random ones
# more, erfinv 0.54, erfcinv 0.56, ndtri 0.56, log_ndtr 0.55; correctly rounded: 0.5)
BOUND = {"erfinv": 0.6, "erfcinv": 0.6, "ndtri": 0.6, "log_ndtr": 0.6}
ERF_QUARTER = math.erf(0.25)  # the start crosses erf's seam y = 1/4 (series | table) here
ERFC_8 = 1.1224297172982928e-29  # erfc(8): the start crosses erfcx's far seam y = 8 here
# c = exp(−w²) at the seams w = 2^(e − 1) of the tail's start, e = 1 .. 5
BINADES = [math.exp(-(4.0 ** (e - 1))) for e in range(1, 6)]
LN2_TAIL = 2.0**-30


def near(seams: list[float]) -> np.ndarray:
    """Both sides of each seam: a few ulps, and a relative 1e-12, 1e-8, 1e-4 away."""
    out = []
    for s in seams:
        out += [s * (1 + k * 2.0**-52) for k in range(-3, 4)]
        out += [s * (1 + side * d) for d in (1e-12, 1e-8, 1e-4) for side in (-1, 1)]
    return np.array(out)


def tails(end: float, side: int, rng: np.random.Generator) -> np.ndarray:
    """Points approaching ``end`` from ``side``: k ulps (k = 1 .. 20) and 10^-u, u in (0, 16)."""
    steps = np.concatenate([np.arange(1, 21) * np.spacing(abs(end) or 1.0) / 2,
                            10.0 ** -rng.uniform(0.0, 16.0, 300)])
    return end + side * steps


def samples(name: str) -> np.ndarray:
    """The points for ``name`` (about 4,000 to 5,000), sorted and distinct, in the domain."""
    rng = np.random.default_rng(40)
    logs = 10.0 ** rng.uniform(-300, 0, 600)
    if name == "erfinv":
        seams = [LN2_TAIL, ERF_QUARTER, 0.5] + [1.0 - c for c in BINADES[:3]]
        parts = [rng.uniform(-1, 1, 2000), rng.uniform(-0.6, 0.6, 600), 0.5 * logs,
                 tails(1.0, -1, rng), near(seams)]
        points = np.concatenate(parts)
        points = np.concatenate([points, -points])
        lo, hi = -1.0, 1.0
    elif name in ("erfcinv", "ndtri"):
        half = 1.0 if name == "erfcinv" else 0.5  # erfcinv(x) = −ndtri(x/2)·√(1/2)
        seams = [0.5, 1.0 - ERF_QUARTER, 1.0 - LN2_TAIL, ERFC_8] + BINADES
        seams = [half * s for s in seams]
        uniform = rng.uniform(0, 2 * half, 2000)
        small = half * np.concatenate([logs, 10.0 ** rng.uniform(-323.6, -300, 100)])
        parts = [uniform, small, tails(0.0, 1, rng), tails(half, -1, rng), tails(half, 1, rng),
                 near(seams), 10.0 ** rng.uniform(-1, 0, 300) * half]
        points = np.concatenate(parts)
        points = np.concatenate([points, 2 * half - points])
        lo, hi = 0.0, 2 * half
    else:  # log_ndtr: t = −x/√2 crosses 1/4 at |x| = 0.354, erfcx's far seam 8 at −11.3
        tables = [2.0**e * (1 + i / 8) for e in range(-2, 3) for i in range(8)] + [8.0]
        seams = [-(2.0**64), -1.0, 10.0, 38.5, 40.0] + [s * side * math.sqrt(2)
                                                  for s in tables for side in (-1, 1)]
        parts = [rng.uniform(-40, 40, 2000), rng.uniform(-2, 2, 600),
                 -(10.0 ** rng.uniform(-300, 154.2, 600)), 10.0 ** rng.uniform(-300, 1.6, 300),
                 near(seams)]
        points = np.concatenate(parts)
        lo, hi = -np.inf, np.inf
    points = points[(points > lo) & (points < hi)]
    return np.unique(points)


@pytest.mark.parametrize("name", NAMES)
def test_within_the_bound_of_mpmath_over_the_whole_domain(name):
    assert_own_value_within(ie, name, samples(name), BOUND[name], judged_over=3500)


# (function, argument, value): the ends of the domain, signed zeros, subnormal arguments
EDGES = [("erfinv", 1.0, np.inf), ("erfinv", -1.0, -np.inf), ("erfinv", 1.5, np.nan),
         ("erfinv", -np.inf, np.nan), ("erfinv", 0.0, 0.0), ("erfinv", -0.0, 0.0),
         ("erfinv", np.nan, np.nan), ("erfinv", 5e-324, 5e-324), ("erfinv", -5e-324, -5e-324),
         ("erfcinv", 0.0, np.inf), ("erfcinv", -0.0, np.inf), ("erfcinv", 2.0, -np.inf),
         ("erfcinv", 1.0, -0.0), ("erfcinv", -1.0, np.nan), ("erfcinv", 2.5, np.nan),
         ("erfcinv", np.inf, np.nan), ("erfcinv", np.nan, np.nan),
         ("erfcinv", 5e-324, 27.21329321081295), ("ndtri", 0.0, -np.inf),
         ("ndtri", 1.0, np.inf), ("ndtri", 0.5, 0.0), ("ndtri", -1e-300, np.nan),
         ("ndtri", 1.5, np.nan), ("ndtri", np.nan, np.nan), ("ndtri", 5e-324, -38.467405617144344),
         ("log_ndtr", -np.inf, -np.inf), ("log_ndtr", np.inf, -0.0), ("log_ndtr", 40.0, -0.0),
         ("log_ndtr", np.nan, np.nan), ("log_ndtr", 0.0, -0.6931471805599453),
         ("log_ndtr", -1e200, -np.inf), ("log_ndtr", -1e100, -5e199)]


@pytest.mark.parametrize("name, x, want", EDGES)
def test_edge_values(name, x, want):
    got = getattr(ie, name)(np.array([x]))[0]
    if np.isnan(want):
        assert np.isnan(got), (name, x, got)
    else:
        assert got == want and np.signbit(got) == np.signbit(want), (name, x, got)


def test_edge_values_are_scipys():
    special = pytest.importorskip("scipy.special")
    xs = {"erfinv": [np.nan, 0.0, -0.0, 1.0, -1.0, 1.5, -1.5, np.inf, -np.inf, 5e-324],
          "erfcinv": [np.nan, 0.0, -0.0, 2.0, 1.0, -1.0, 3.0, np.inf, -np.inf, 1e-300],
          "ndtri": [np.nan, 0.0, -0.0, 1.0, 0.5, -1.0, 3.0, np.inf, -np.inf],
          "log_ndtr": [np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0, 1e300, -1e300]}
    for name, points in xs.items():
        got, want = getattr(ie, name)(np.array(points)), getattr(special, name)(points)
        np.testing.assert_array_equal(got, want)
        numbers = ~np.isnan(want)  # (and a NaN's sign is no edge value)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def test_dtypes_and_shapes():
    x = np.linspace(0.05, 0.95, 12).reshape(3, 4)
    for name in NAMES:
        f = getattr(ie, name)
        want = f(x.ravel()).reshape(3, 4)
        np.testing.assert_array_equal(f(x), want)
        np.testing.assert_array_equal(f(x.T), want.T)  # (not contiguous)
        assert f(x.astype(np.float32)).dtype == np.float32  # (as SciPy's)
        scalar = f(0.25)
        assert isinstance(scalar, np.float64) and scalar == f(np.array([0.25]))[0]
        assert f(np.empty((0, 2))).shape == (0, 2)


def test_the_tables_are_the_generators_output():
    """``python -m diffkit.primitives.inverse_error --fit`` prints the module's tables."""
    from diffkit.primitives.error_function import _source

    tables = ie.fit()
    assert tables == {"CENTRAL": stored.CENTRAL, "TAIL_ROWS": stored.TAIL_ROWS}
    assert _source(tables) in Path(stored.__file__).read_text()


def test_the_log_pair_carries_more_than_double_precision():
    """log(hi + lo) as a pair within 2^-58 (relative; measured 2^-59), so log_ndtr's result,
    that pair plus more, is rounded once within 0.5 + 2^-5 ulps."""
    rng = np.random.default_rng(2)
    hi = np.concatenate([10.0 ** rng.uniform(-300, 300, 200), rng.uniform(0.5, 2.0, 200)])
    lo = hi * rng.uniform(-2.0**-53, 2.0**-53, hi.size)
    log_hi, log_lo = ie._log_pair(hi, lo)
    with mpmath.workdps(50):
        worst = max(abs(mp.mpf(a) + mp.mpf(b) - mp.log(mp.mpf(h) + mp.mpf(v)))
                    / abs(mp.log(mp.mpf(h) + mp.mpf(v)))
                    for a, b, h, v in zip(log_hi, log_lo, hi, lo) if h != 1.0)
    assert worst < 2.0**-58, float(worst)


def test_no_scipy_needed(monkeypatch):
    """Real values and their first and second derivatives with SciPy out of reach."""
    import diffkit.primitives.special as special

    def refuse() -> None:
        raise AssertionError("scipy.special was called")

    points = {"erfinv": [-0.999, -0.3, 1e-20, 0.6, 0.99999], "erfcinv": [1e-100, 0.3, 1.2, 1.9],
              "ndtri": [1e-100, 0.01, 0.4, 0.9], "log_ndtr": [-1e10, -30.0, -0.5, 0.1, 5.0]}
    want = {n: getattr(ie, n)(np.array(points[n])) for n in NAMES}
    monkeypatch.setattr(special, "scipy_special", refuse)
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    for name in NAMES:
        f, x = getattr(dsp, name), np.array(points[name])
        np.testing.assert_array_equal(f(x), want[name])
        d1 = dk.grad(lambda v, f=f: dnp.sum(f(v)))
        d2 = dk.grad(lambda v, d1=d1: dnp.sum(d1(v)))
        with np.errstate(all="ignore"):
            assert np.isfinite(d1(x)).all() and not np.isnan(d2(x)).any()


def test_complex_log_ndtr_is_still_scipys():
    special = pytest.importorskip("scipy.special")
    z = np.array([1.0 + 1.0j, -0.5j, -3.0 - 2.0j])
    np.testing.assert_array_equal(dsp.log_ndtr(z), special.log_ndtr(z))
