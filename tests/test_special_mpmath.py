"""diffkit.scipy.special's derivatives against mpmath at 30 digits.

For each function, first derivatives (forward, reverse and compiled) and second ones at a few
points, among them points next to a singularity, pole, branch point or the edge of the
domain, compared with mpmath's own derivative (``mp.diff``: extrapolated differences in
30-digit arithmetic) of its 30-digit implementation, at the exact double input. Orders and
shapes that are not differentiable are refused by name (the last tests).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp

mpmath = pytest.importorskip("mpmath")
import diffkit.scipy.special as dsp  # noqa: E402

mp = mpmath.mp
mp.dps = 30


def _ndtri(p: Any) -> Any:
    return mp.sqrt(2) * mp.erfinv(2 * p - 1)


# name: (diffkit function of x, mpmath function of x, points): orders and shapes fixed
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], list[float]]] = {
    "gamma": (dsp.gamma, mp.gamma, [2.5, 0.1, -0.5, -1.0 + 1e-6, -2.7, 30.0]),
    "rgamma": (dsp.rgamma, mp.rgamma, [2.5, -0.5, 0.0, -1.0, -2.0, -3.0 + 1e-4, 1.0]),  # (*)
    "beta": (lambda x: dsp.beta(x, 2.5), lambda x: mp.beta(x, 2.5), [0.3, 1e-4, 7.0]),
    "betaln": (lambda x: dsp.betaln(1.7, x), lambda x: mp.log(mp.beta(1.7, x)), [0.3, 1e-4, 40.0]),
    "erfinv": (dsp.erfinv, mp.erfinv, [0.0, 0.5, -0.999999, 1.0 - 1e-12]),
    "erfcinv": (dsp.erfcinv, lambda x: mp.erfinv(1 - x), [1.0, 0.3, 1e-9, 1.999]),
    "erfcx": (dsp.erfcx, lambda x: mp.exp(x * x) * mp.erfc(x), [0.0, 2.0, -3.0, 30.0]),
    "ndtr": (dsp.ndtr, mp.ncdf, [0.0, 1.3, -8.0]),
    "ndtri": (dsp.ndtri, _ndtri, [0.5, 0.975, 1e-10, 1.0 - 1e-9]),
    "i0": (dsp.i0, lambda x: mp.besseli(0, x), [0.0, 1.5, -3.0, 20.0]),
    "i1": (dsp.i1, lambda x: mp.besseli(1, x), [0.0, 1.5, -3.0]),
    "i0e": (dsp.i0e, lambda x: mp.besseli(0, x) * mp.exp(-abs(x)), [0.7, -3.0, 50.0]),
    "i1e": (dsp.i1e, lambda x: mp.besseli(1, x) * mp.exp(-abs(x)), [0.7, -3.0, 50.0]),
    "iv": (lambda x: dsp.iv(2.5, x), lambda x: mp.besseli(2.5, x), [0.1, 3.0]),
    "ive": (lambda x: dsp.ive(1.5, x), lambda x: mp.besseli(1.5, x) * mp.exp(-x), [0.1, 3.0, 40.0]),
    "j0": (dsp.j0, lambda x: mp.besselj(0, x), [0.0, 2.404825557695773, 10.0]),
    "j1": (dsp.j1, lambda x: mp.besselj(1, x), [0.0, 3.8317059702075125, -2.0]),
    "jn": (lambda x: dsp.jn(3, x), lambda x: mp.besselj(3, x), [0.5, 6.0]),
    "jv": (lambda x: dsp.jv(0.5, x), lambda x: mp.besselj(0.5, x), [0.5, 6.0]),
    "y0": (dsp.y0, lambda x: mp.bessely(0, x), [1e-3, 0.8935769662791675, 7.0]),
    "y1": (dsp.y1, lambda x: mp.bessely(1, x), [1e-3, 2.0]),
    "yn": (lambda x: dsp.yn(2, x), lambda x: mp.bessely(2, x), [0.5, 6.0]),
    "zeta": (lambda q: dsp.zeta(3.0, q), lambda q: mp.zeta(3, q), [1.0, 0.01, 5.0]),
    "spence": (dsp.spence, lambda z: mp.polylog(2, 1 - z), [1.0, 1.0 + 1e-9, 0.95, 1e-3, 4.0]),
    "xlog1py": (lambda y: dsp.xlog1py(1.5, y), lambda y: 1.5 * mp.log1p(y), [-0.999, 0.0, 2.0]),
    "entr": (dsp.entr, lambda x: -x * mp.log(x), [1e-6, 0.5, 3.0]),
    "kl_div": (lambda x: dsp.kl_div(x, 0.7), lambda x: x * mp.log(x / 0.7) - x + 0.7, [1e-6, 0.7, 3.0]),
    "rel_entr": (lambda y: dsp.rel_entr(0.4, y), lambda y: 0.4 * mp.log(0.4 / y), [1e-6, 2.0]),
    "gammainc": (lambda x: dsp.gammainc(0.5, x), lambda x: mp.gammainc(0.5, 0, x, regularized=True),
                 [1e-8, 0.5, 30.0]),
    "gammaincc": (lambda x: dsp.gammaincc(3.5, x), lambda x: mp.gammainc(3.5, x, mp.inf, regularized=True),
                  [1e-3, 2.0, 20.0]),
    "betainc": (lambda x: dsp.betainc(0.5, 2.5, x),
                lambda x: mp.betainc(0.5, 2.5, 0, x, regularized=True), [1e-8, 0.4, 1.0 - 1e-6]),
    "multigammaln": (lambda a: dsp.multigammaln(a, 3), lambda a: mp.log(mp.pi ** 1.5 * mp.gamma(a)
                     * mp.gamma(a - 0.5) * mp.gamma(a - 1)), [1.01, 4.0]),
}


# (*) Closer to a pole of Gamma at a negative integer, SciPy's digamma (the derivative's
# factor) loses relative accuracy as ~1e-17 / distance: 9e-9 at 1e-9 from -3.


def _rel_error(got: float, want: Any) -> float:
    want = float(want)  # (a derivative of 0 that mpmath's differencing leaves at 1e-51 is 0)
    return abs(got - want) / max(abs(want), 1e-30)


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_derivatives_match_mpmath(name: str) -> None:
    fn, ref, points = CASES[name]
    for x in points:
        x_mp = mp.mpf(x)
        want = float(ref(x_mp))  # (absolute at Bessel zeros: the value there is rounding)
        assert abs(float(fn(x)) - want) <= 1e-13 * max(abs(want), 1.0), (name, x, "value")
        d1, d2 = mp.diff(ref, x_mp), mp.diff(ref, x_mp, 2)
        for backend in ("forward", "reverse", "compiled"):
            got = float(dk.grad(fn, backend=backend)(x))
            assert _rel_error(got, d1) < 1e-11, (name, x, backend, got, d1)
        got2 = float(dk.grad(dk.grad(fn, backend="reverse"), backend="forward")(x))
        assert abs(got2 - float(d2)) <= 1e-9 * max(abs(float(d2)), abs(float(d1)), 1.0), (name, x, got2, d2)


@pytest.mark.parametrize("call,arg", [
    (lambda n: dsp.jn(n, 1.3), "order n"), (lambda n: dsp.yn(n, 1.3), "order n"),
    (lambda v: dsp.iv(v, 1.3), "'v'"), (lambda v: dsp.ive(v, 1.3), "'v'"),
    (lambda a: dsp.betainc(a, 2.0, 0.3), "'a'"), (lambda b: dsp.betainc(1.5, b, 0.3), "'b'"),
    (lambda x: dsp.zeta(x, 2.0), "'x'"),
])
def test_orders_and_shapes_are_refused_by_name(call: Callable[[Any], Any], arg: str) -> None:
    for backend in ("forward", "reverse"):
        with pytest.raises(dk.DiffkitError, match=arg):
            dk.grad(call, backend=backend)(2.0)


def test_a_non_integer_order_of_jn_is_an_error() -> None:
    with pytest.raises(dk.DiffkitError, match="must be an integer"):
        dsp.jn(1.5, np.array([1.0]))


def test_out_of_domain_entropies_are_infinite_as_scipy() -> None:
    import scipy.special as ss

    x, y = np.array([-1.0, 0.0, 0.0, 2.0, 2.0]), np.array([1.0, 0.0, 3.0, 0.0, -1.0])
    np.testing.assert_array_equal(dsp.kl_div(x, y), ss.kl_div(x, y))
    np.testing.assert_array_equal(dsp.rel_entr(x, y), ss.rel_entr(x, y))
    np.testing.assert_array_equal(dsp.entr(x), ss.entr(x))


def _ive(v: float) -> Callable[[Any], Any]:
    return lambda x: mp.besseli(v, x) * mp.exp(-abs(x))


# (diffkit function, mpmath function, x, derivative order, ulps): where SciPy's own value or
# the textbook rule lost digits (docs/accuracy.md gives each one's before and after)
KEPT_DIGITS = [
    (lambda x: dsp.gammainc(2.5, x), lambda x: mp.gammainc(2.5, 0, x, regularized=True),
     1e-120, 0, 4),  # SciPy's: 600 ulps (its prefactor's exponent, -690, rounded first)
    (lambda x: dsp.gammaincc(2.5, x), lambda x: mp.gammainc(2.5, x, mp.inf, regularized=True),
     600.0, 0, 4),
    (lambda x: dsp.gammainc(2.5, x), lambda x: x**1.5 * mp.exp(-x) / mp.gamma(2.5),
     9.06e-198, 1, 4),  # exp(xlogy(a - 1, x) - x - gammaln(a)): 513 ulps
    (lambda x: dsp.gammaincc(2.5, x), lambda x: -x**1.5 * mp.exp(-x) / mp.gamma(2.5),
     710.0, 1, 4),  # (exp(-x) is subnormal there, the density is not)
    (lambda x: dsp.betainc(0.5, 2.5, x), lambda x: x**-0.5 * (1 - x)**1.5 / mp.beta(0.5, 2.5),
     1.36e-291, 1, 4),  # 290 ulps
    (dsp.i0e, _ive(0), 1e115, 0, 4),  # SciPy's i0e: 1.26e-58 for 3.99e-58
    (lambda x: dsp.ive(1.0, x), _ive(1), -1e200, 0, 4),  # SciPy's ive: NaN from 1.3e9
    (lambda x: dsp.ive(1.0, x), lambda x: mp.diff(_ive(1), x), 1e10, 1, 4),
    (lambda x: dsp.iv(1.0, x), lambda x: mp.besseli(1, x), 1e-300, 0, 1),  # SciPy's: 0
    (dsp.gammaln, lambda x: mp.log(abs(mp.gamma(x))), -2.4570247, 0, 4),  # SciPy's: 6e5 ulps
    (dsp.digamma, mp.digamma, -0.5040830082644554 * (1 + 1e-15), 0, 4),  # every digit lost
    (lambda x: dsp.polygamma(2, x), lambda x: mp.polygamma(2, x), -2.49944439, 0, 4),
    (lambda q: dsp.zeta(3.0, q), lambda q: mp.zeta(3, q), 3.0, 0, 2.5),  # SciPy's: 4.9 near 3
    (dsp.entr, lambda x: -(mp.log(x) + 1), 0.36787944117144233, 1, 1),  # SciPy's rule: 5.5e15
    (dsp.entr, lambda x: -(mp.log(x) + 1), 0.36787944117144233 * (1 + 4e-16), 1, 1),
    (dsp.entr, lambda x: -(mp.log(x) + 1), 0.5518, 1, 1),  # (the near form's edge)
    (lambda x: dsp.yv(1.0, x), lambda x: (mp.bessely(0, x) - mp.bessely(2, x)) / 2,
     1.143116534147814e-152, 1, 4),  # SciPy's yv(2, x) is -inf there: the rule gave inf
    (dnp.sinc, lambda x: mp.diff(mp.sincpi, x), 8.488602684555211, 1, 1),  # 142 ulps in doubles
    (lambda x: dsp.rgamma(x), lambda x: mp.diff(mp.rgamma, x), -40.77570870112706, 1, 4),  # 136
]


def test_entr_derivatives_constants_are_the_double_nearest_1_over_e_and_its_log_plus_1():
    from diffkit.primitives import special

    with mp.workdps(50):
        assert special._INVERSE_E == float(1 / mp.e)
        assert special._LOG_INVERSE_E_PLUS_1 == float(mp.log(mp.mpf(special._INVERSE_E)) + 1)


@pytest.mark.parametrize("fn, ref, x, order, ulps", KEPT_DIGITS)
def test_the_reviewed_forms_keep_their_digits(fn: Callable[[Any], Any], ref: Callable[[Any], Any],
                                              x: float, order: int, ulps: float) -> None:
    with mp.workdps(40):
        want = float(ref(mp.mpf(x)))
    got = float(dk.grad(fn)(x) if order else fn(x))
    assert abs(got - want) <= ulps * np.spacing(abs(want)), (x, got, want)


def test_spence_is_within_two_ulps_on_each_of_its_ranges_and_keeps_scipys_conventions():
    """diffkit's own spence: the Bernoulli series in −log x on [1/4, 4], the reflection
    below, the inversion above, each side of the seams and far out, against
    Li₂(1 − x) at 50 digits (SciPy's Cephes routine is 14–16 ulps off next to 2);
    NaN below 0, π²/6 at 0, 0 at 1, and SciPy's own on complex numbers."""
    scipy_special = pytest.importorskip("scipy.special")
    xs = np.concatenate([[1e-300, 1e-20, 1e-8, 0.1, 0.2499999999999, 0.25, 0.2500000001, 0.5,
                          0.999999, 1.0 + 1e-12, 2.0, 2.0657371714643302, 3.9999999,
                          4.0, 4.0000001, 10.0, 1e5, 1e300],
                         np.linspace(0.01, 8.0, 97)])
    got = dsp.spence(xs)
    with mp.workdps(50):
        for x, y in zip(xs, got):
            want = mp.polylog(2, 1 - mp.mpf(x))
            assert abs(y - want) <= 2 * np.spacing(abs(float(want))), x
    assert np.isnan(dsp.spence(-0.5)) and dsp.spence(0.0) == np.pi ** 2 / 6
    assert dsp.spence(1.0) == 0.0 and np.signbit(dsp.spence(1.0)) == np.signbit(0.0)
    z = np.array([0.5 + 0.5j, 2.0 - 1.0j])
    np.testing.assert_array_equal(dsp.spence(z), scipy_special.spence(z))


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_on_the_negative_axis_keeps_its_digits_next_to_poles_and_zeros(n, monkeypatch):
    """The reflection formula: random points in (-200, 0), the neighbourhoods of the poles
    and of the zeros of digamma and polygamma(2) among them, against mpmath rounded to
    doubles (so a count of whole ulps); digamma and polygamma(2) in long double where numpy
    has it (the formula in doubles: 75 ulps for digamma), and in doubles (Windows, ARM
    macOS) with the Taylor series about the zeros, in (-20, 0)."""
    from diffkit.primitives import extended, polygamma_negative

    rng = np.random.default_rng(n)
    xs = np.concatenate([-rng.uniform(0.0, 200.0, 150), -rng.integers(1, 200, 20) + 1e-9,
                         -np.arange(1.0, 20.0) - 0.48])
    with mp.workdps(30):
        want = np.array([float(mp.polygamma(n, mp.mpf(x))) for x in xs])
    long_double = extended.EXTENDED
    got = np.asarray(dsp.polygamma(n, xs))
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= (2, 3, 2, 4)[n] if long_double else 75, (xs[ulps.argmax()], ulps.max())
    monkeypatch.setattr(polygamma_negative, "EXTENDED", False)
    inner = xs > -20
    ulps = np.abs(np.asarray(dsp.polygamma(n, xs[inner])) - want[inner]) / np.spacing(np.abs(want[inner]))
    assert ulps.max() <= 5, (xs[inner][ulps.argmax()], ulps.max())


def test_beta_and_betaln_keep_their_digits_where_one_argument_is_large():
    """Stirling's series for B(s, L), L >= 10 (and the reflection for a negative s), against
    mpmath: SciPy's take log-gamma differences beyond Γ's range (3.8e5 ulps at 4.9e4)."""
    rng = np.random.default_rng(0)
    large = np.exp(rng.uniform(np.log(10.0), np.log(1e6), 120))
    small = np.concatenate([rng.uniform(0.01, 5.0, 60), large[60:] * rng.uniform(1e-3, 0.09, 60)])
    small = np.concatenate([small, -rng.uniform(20.0, 5e4, 30) - 0.3])
    large = np.concatenate([large, rng.uniform(0.5, 6.0, 30)])
    with mp.workdps(40):
        exact = [mp.beta(mp.mpf(s), mp.mpf(b)) for s, b in zip(small, large)]
    b_want = np.array([float(v) for v in exact])
    ln_want = np.array([float(mp.log(abs(v))) for v in exact])
    normal = np.abs(b_want) > 1e-300
    for got, want, limit in ((dsp.beta(small, large), b_want, 5), (dsp.beta(large, small), b_want, 5),
                             (dsp.betaln(small, large), ln_want, 5)):
        ulps = np.abs(got - want)[normal] / np.spacing(np.abs(want[normal]))
        assert ulps.max() <= limit, (small[normal][ulps.argmax()], ulps.max())


@pytest.mark.parametrize("v", [0.0, 1.0, 2.5])
def test_iv_and_ive_between_their_two_series_keep_their_digits(v):
    """Between |x| = 2 and 20 + v^2 the power series in long double (SciPy's iv: 8 ulps),
    against mpmath rounded to doubles."""
    from diffkit.primitives import extended

    rng = np.random.default_rng(int(v * 10))
    xs = rng.uniform(2.0, 20.0 + v * v, 120) * (rng.choice([-1.0, 1.0], 120) if v != 2.5 else 1.0)
    with mp.workdps(40):
        i = [mp.besseli(v, mp.mpf(x)) for x in xs]
        want_i = np.array([float(w) for w in i])
        want_e = np.array([float(w * mp.exp(-abs(mp.mpf(x)))) for w, x in zip(i, xs)])
    for got, want in ((dsp.iv(v, xs), want_i), (dsp.ive(v, xs), want_e)):
        ulps = np.abs(got - want) / np.spacing(np.abs(want))
        assert ulps.max() <= (4 if extended.EXTENDED else 9), (xs[ulps.argmax()], ulps.max())
