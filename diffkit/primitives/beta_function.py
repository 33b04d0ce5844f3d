"""B(a, b) and log |B(a, b)| where one argument is 10 or more: by Stirling's series.

SciPy's ``beta`` and ``betaln`` take ``log Γ(a) + log Γ(b) − log Γ(a + b)`` once a + b is
beyond Γ's range (171.6), and there the terms of size a log a cancel down to b log a:
3.8e5 ulps at a = 4.9e4, b = 2.5 (33 at its 99th percentile over the atlas's points).
With L = max(a, b), s = min(a, b) > 0 and t = s/L ≤ 1,

    log B = log Γ(s) − s log L + E,  B = Γ(s) L^−s e^E,
    E = −(L + s − ½)·(log1p(t) − t) − (s − ½)·t + S(L) − S(L + s),

S(z) = Σ B₂ₖ/(2k(2k − 1) z^(2k−1)) Stirling's correction (8 terms: below 1e-17 of S from
z = 10). E is small where the terms cancelled, and every term of it is computed without a
cancellation: ``log1p(t) − t = −t·u + 2u³ Σ u^2j/(2j + 3)``, u = t/(2 + t) ≤ 1/3. A
negative argument s with L > 0 and 1 − s − L ≥ 10 is taken there by the reflection
``B(s, L) = B(1 − s − L, L)·sin π(s + L)/sin πs``.

>>> float(beta(49000.0, 2.5))  # mpmath: 2.50109035523051058…e-12 (SciPy's: 2.5010903552e-12, 3.8e5 ulps off)
2.5010903552305106e-12
"""

from __future__ import annotations

from collections.abc import Callable
from math import factorial
from typing import Any

import numpy as np

from .extended import pi_times
from .polygamma_negative import BERNOULLI

_FROM = 10.0
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(BERNOULLI[:8], start=1))
_LOG1PMX_TERMS = 20  # u² ≤ 1/9: the 20th term is below 1e-19 of the first


def _stirling(z: np.ndarray) -> np.ndarray:
    """S(z) = log Γ(z) − ((z − ½) log z − z + ½ log 2π), for z ≥ 10."""
    w = 1.0 / (z * z)
    total = np.zeros_like(z)
    for c in reversed(_STIRLING):  # Horner's rule in 1/z²
        total = total * w + c
    return total / z


def _log1pmx(t: np.ndarray) -> np.ndarray:
    """log(1 + t) − t for 0 ≤ t ≤ 1, as −t u + 2u³ Σ u^2j/(2j + 3), u = t/(2 + t)."""
    u = t / (2.0 + t)
    u2 = u * u
    total = np.zeros_like(t)
    for j in reversed(range(_LOG1PMX_TERMS)):
        total = total * u2 + 1.0 / (2 * j + 3)
    return -t * u + 2.0 * u * u2 * total


def _sinpi(x: np.ndarray, low: np.ndarray | float = 0.0) -> np.ndarray:
    """sin π(x + low), |low| ≤ ulp(x), as ±sin πr, r = x − rint(x) exact, with πr + π low as
    two doubles (Dekker's product)."""
    n = np.rint(x)
    hi, lo = pi_times(x - n)
    lo = lo + np.pi * low
    return np.where(np.fmod(n, 2) == 0, 1.0, -1.0) * (np.sin(hi) + lo * np.cos(hi))


def _parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray]:
    """Where the series applies, and s, L, E there (harmless values elsewhere), and the
    factor of the reflection: for s < 0 < L with 1 − s − L ≥ 10,
    B(s, L) = B(1 − s − L, L)·sin π(s + L)/sin πs, with s + L as two doubles."""
    small, large = np.minimum(a, b), np.maximum(a, b)
    reflect = (small < 0) & (large > 0) & (1.0 - small - large >= _FROM) & (small != np.rint(small))
    total = small + large
    rounded = (small - (total - (total - small))) + (large - (total - small))  # (Knuth's two-sum)
    with np.errstate(all="ignore"):
        factor = np.where(reflect, _sinpi(total, rounded) / _sinpi(small), 1.0)
    small, large = (np.where(reflect, np.minimum(large, 1.0 - small - large), small),
                    np.where(reflect, np.maximum(large, 1.0 - small - large), large))
    use = (small > 0) & (large >= _FROM) & np.isfinite(large)
    s, big = np.where(use, small, 1.0), np.where(use, large, _FROM)
    t = s / big
    e = (-(big + s - 0.5) * _log1pmx(t) - (s - 0.5) * t
         + _stirling(big) - _stirling(big + s))
    return use, s, big, e, factor


def _by_series(scipy_fn: Callable[..., Any], value: Callable[..., Any],
               below: float = np.inf) -> Callable[..., Any]:
    """``scipy_fn(a, b)``, but ``value(s, L, E, reflection's factor)`` where the series
    applies and s < ``below``."""
    def impl(a: Any, b: Any) -> Any:
        if np.iscomplexobj(a) or np.iscomplexobj(b):
            return scipy_fn(a, b)
        a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
        with np.errstate(all="ignore"):
            use, s, big, e, factor = _parts(a, b)
            use &= s < below
            out = np.where(use, value(s, big, e, factor),
                           scipy_fn(np.where(use, 1.0, a), np.where(use, 1.0, b)))
        return out[()] if out.ndim == 0 else out
    return impl


def _beta_value(s: np.ndarray, big: np.ndarray, e: np.ndarray, factor: np.ndarray) -> np.ndarray:
    import scipy.special as sc  # (deferred: SciPy is an optional extra)

    half = np.power(big, -0.5 * s)  # (L^-s in two halves: it underflows before B does)
    return sc.gamma(s) * half * half * np.exp(e) * factor


def _betaln_value(s: np.ndarray, big: np.ndarray, e: np.ndarray, factor: np.ndarray) -> np.ndarray:
    import scipy.special as sc  # (deferred: SciPy is an optional extra)

    return sc.gammaln(s) - s * np.log(big) + e + np.log(np.abs(factor))


def beta(a: Any, b: Any) -> Any:
    """B(a, b): SciPy's where both arguments are below 10, one is at most 0 or both are
    171 or more (Γ(s) overflows)."""
    import scipy.special as sc  # (deferred: SciPy is an optional extra)

    return _by_series(sc.beta, _beta_value, below=171.0)(a, b)


def betaln(a: Any, b: Any) -> Any:
    """log |B(a, b)|: SciPy's where both arguments are below 10 or one is at most 0."""
    import scipy.special as sc  # (deferred: SciPy is an optional extra)

    return _by_series(sc.betaln, _betaln_value)(a, b)
