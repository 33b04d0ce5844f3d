"""diffkit's own erf, erfc and erfcx (``diffkit/primitives/error_function.py``) against
mpmath at 50 digits.

Each function on a dense sample of its whole domain, both signs: uniform points over its
working range and near 0, log-spaced magnitudes from 1e-300 up to where the result under-
or overflows, the tails up to there, and both sides of every seam between its pieces (the
ends of the series, of each eighth of a binade of the tables, of the far form, and the
points where the result rounds to its limit), a few ulps and a relative 1e-12 .. 1e-4 away.
The error is ``|got − exact| / ulp(exact)`` (``diffkit.bench.atlas.ulps``) where the exact
result is a normal float. Then the edge values (NaN, infinities, signed zeros, subnormals),
dtypes and shapes, the tables against their generator, the pairs the pieces compute, and
the functions and their derivatives with SciPy out of reach.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_own_value_within

import diffkit as dk
import diffkit.numpy as dnp
import diffkit.scipy.special as dsp
from diffkit.primitives import error_function as ef
from diffkit.primitives import error_function_tables as stored

mpmath = pytest.importorskip("mpmath")
from diffkit.bench import atlas  # noqa: E402  (imports mpmath)

mp = mpmath.mp
NAMES = ("erf", "erfc", "erfcx")
BOUND = 0.6  # ulps, each function (measured: 0.52 to 0.55; correctly rounded is within 0.5)
# the working range sampled uniformly, and the largest magnitude sampled on each side
RANGE = {"erf": (-6.5, 6.5), "erfc": (-6.5, 27.3), "erfcx": (-26.7, 60.0)}
SPAN = {"erf": (1e300, 1e300), "erfc": (6.5, 27.3), "erfcx": (26.7, 1e300)}
# the seams: the series' end, each eighth of a binade of the tables from 1/4 to 8, the end
# of erf's table, and where each result rounds to its limit or overflows
TABLES = [2.0**e * (1 + i / 8) for e in range(-2, 3) for i in range(8)] + [8.0]
SEAMS = {"erf": [*TABLES, 5.92, 6.0], "erfc": [*TABLES, 5.86, 6.0, 26.5, 27.23, 27.3],
         "erfcx": [*TABLES, 26.63, 27.0]}


def samples(name: str) -> np.ndarray:
    """The points for ``name`` (about 4,500), sorted and distinct."""
    rng = np.random.default_rng(40)
    lo, hi = RANGE[name]
    negative, positive = SPAN[name]
    near = []
    for s in SEAMS[name]:
        near += [s * (1 + k * 2.0**-52) for k in range(-3, 4)]
        near += [s * (1 + side * d) for d in (1e-12, 1e-8, 1e-4) for side in (-1, 1)]
    seams = np.array(near)
    parts = [rng.uniform(lo, hi, 2000), rng.uniform(-0.6, 0.6, 600),
             10.0 ** rng.uniform(-300, np.log10(positive), 300),
             -(10.0 ** rng.uniform(-300, np.log10(negative), 300)),
             rng.uniform(0.9 * positive, positive, 200) if positive < 1e300 else [],
             -rng.uniform(0.9 * negative, negative, 200) if negative < 1e300 else [],
             seams, -seams]
    return np.unique(np.concatenate(parts))


@pytest.mark.parametrize("name", NAMES)
def test_within_the_bound_of_mpmath_over_the_whole_domain(name):
    assert_own_value_within(ef, name, samples(name), BOUND, judged_over=4000)


# (x, erf, erfc, erfcx): the limits, signed zeros, subnormal arguments and results
EDGES = [(np.nan, np.nan, np.nan, np.nan), (np.inf, 1.0, 0.0, 0.0),
         (-np.inf, -1.0, 2.0, np.inf), (0.0, 0.0, 1.0, 1.0), (-0.0, -0.0, 1.0, 1.0),
         (5e-324, 5e-324, 1.0, 1.0), (-5e-324, -5e-324, 1.0, 1.0),
         (1e-310, 1.1283791670955e-310, 1.0, 1.0), (6.0, 1.0, 2.1519736712498913e-17, None),
         (-6.0, -1.0, 2.0, None), (27.3, 1.0, 0.0, None), (-27.0, -1.0, 2.0, np.inf),
         (1e300, 1.0, 0.0, 5.641895835477562e-301)]


@pytest.mark.parametrize("x, erf, erfc, erfcx", EDGES)
def test_edge_values(x, erf, erfc, erfcx):
    for name, want in zip(NAMES, (erf, erfc, erfcx)):
        if want is None:
            continue
        got = getattr(ef, name)(np.array([x]))[0]
        if np.isnan(want):
            assert np.isnan(got), (name, x, got)
        else:
            assert got == want, (name, x, got)  # (each correctly rounded)
            assert np.signbit(got) == np.signbit(want), (name, x, got)


def test_edge_values_are_scipys():
    special = pytest.importorskip("scipy.special")
    xs = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-310, -2.5e-308,
                   2.2250738585072014e-308, 1e-300, -1e-300, 1e300])
    for name in NAMES:
        got, want = getattr(ef, name)(xs), getattr(special, name)(xs)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_dtypes_and_shapes():
    x = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    for name in NAMES:
        f = getattr(ef, name)
        want = f(x.ravel()).reshape(3, 4)
        np.testing.assert_array_equal(f(x), want)
        np.testing.assert_array_equal(f(x.T), want.T)  # (not contiguous)
        np.testing.assert_array_equal(f(x.tolist()), want)
        single = f(x.astype(np.float32))
        assert single.dtype == np.float32  # (as SciPy's: float32 stays float32)
        wide = f(x.astype(np.float32).astype(float))
        np.testing.assert_array_equal(single, wide.astype(np.float32))
        assert f(np.arange(3)).dtype == np.float64
        scalar = f(0.5)
        assert isinstance(scalar, np.float64) and scalar == f(np.array([0.5]))[0]
        assert f(np.empty((0, 2))).shape == (0, 2)


def test_the_tables_are_the_generators_output():
    """``python -m diffkit.primitives.error_function --fit`` prints the module's tables."""
    tables = ef.fit()
    assert tables == {"NEAR_0": stored.NEAR_0, "ERFCX_ROWS": stored.ERFCX_ROWS,
                      "ERF_ROWS": stored.ERF_ROWS, "FAR": stored.FAR}
    assert ef._source(tables) in Path(stored.__file__).read_text()


def _relative(hi: np.ndarray, lo: np.ndarray, want: list) -> float:
    """The largest |hi + lo − want| / |want| (in mpmath)."""
    return max(float(abs((mp.mpf(h) + mp.mpf(v) - w) / w)) for h, v, w in zip(hi, lo, want))


def test_the_pairs_carry_more_than_double_precision():
    """The pieces' pairs, before their one rounding: exp(±x²) within 2^-59 (relative),
    erfcx within 2^-56 (the tables' rests and F's quotient); so the results are within
    0.5 + 2^-56 / 2^-53 ulps, and 1 − erfc(x), 2 − erfc(x) add an ulp's fraction of erfc."""
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(0.0, 27.0, 300), 2.0 ** rng.uniform(-40, -2, 50)])
    with mpmath.workdps(50), np.errstate(over="ignore"):  # (x² overflows far out: w = 0)
        for sign in (-1.0, 1.0):
            hi, lo, m = ef._exp_square(x, sign)
            want = [mp.exp(sign * mp.mpf(v) ** 2) / mp.mpf(2) ** int(k) for v, k in zip(x, m)]
            assert _relative(hi, lo, want) < 2.0**-59
        table = rng.uniform(0.25, 8.0, 300)
        far = np.concatenate([rng.uniform(8.0, 30.0, 200), 10.0 ** rng.uniform(1.5, 300, 100)])
        for xs, pair in ((table, ef._erfcx_table), (far, ef._erfcx_far)):
            want = [atlas.CASES["erfcx"].exact(mp.mpf(v)) for v in xs]
            assert _relative(*pair(xs), want) < 2.0**-56


def test_no_scipy_needed(monkeypatch):
    """Real values and their first and second derivatives with SciPy out of reach: neither
    ``scipy_special`` nor an import of scipy is called (complex values still are SciPy's)."""
    import diffkit.primitives.special as special

    def refuse() -> None:
        raise AssertionError("scipy.special was called")

    x = np.array([-30.0, -5.0, -0.3, 0.0, 1e-300, 0.7, 3.0, 9.0, 27.0, 1e10])
    want = {n: getattr(ef, n)(x) for n in NAMES}
    monkeypatch.setattr(special, "scipy_special", refuse)
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    for name in NAMES:
        f = getattr(dsp, name)
        np.testing.assert_array_equal(f(x), want[name])
        d1 = dk.grad(lambda v, f=f: dnp.sum(f(v)))
        d2 = dk.grad(lambda v, d1=d1: dnp.sum(d1(v)))
        with np.errstate(all="ignore"):
            assert np.isfinite(d1(x[1:])).all() and not np.isnan(d2(x[1:])).any()


def test_complex_values_are_still_scipys():
    special = pytest.importorskip("scipy.special")
    z = np.array([1.0 + 1.0j, -0.5j, 3.0 - 2.0j])
    for name in NAMES:
        np.testing.assert_array_equal(getattr(dsp, name)(z), getattr(special, name)(z))
