"""diffkit's own ``spence`` on real numbers: spence(x) = Li₂(1 − x), SciPy's convention.

SciPy's (Cephes') routine is 14 ulps off next to x = 2. Here every range is a series in a
logarithm of the input itself, so no digit is lost forming ``1 − x``:

* 1/4 ≤ x ≤ 4: the Bernoulli series of the dilogarithm, Li₂(z) = Σₙ Bₙ uⁿ⁺¹/(n + 1)! with
  u = −log(1 − z) (B₁ = −1/2; it converges for |u| < 2π); for z = 1 − x that is
  u = −log x, |u| ≤ log 4, a factor (u/2π)² ≤ 0.05 from one even term to the next;
* 0 < x < 1/4: Euler's reflection, spence(x) = π²/6 − log x · log(1 − x) − Li₂(x), Li₂(x)
  by the same series in u = −log1p(−x) (|u| < 0.29); π²/6 as two doubles, added last;
* x > 4: the inversion, spence(x) = −spence(1/x) − ½ log² x (no cancellation: both terms
  are negative there);

and spence(0) = π²/6, NaN below 0 (as SciPy). Within ~1 ulp of the 50-digit value
(``docs/accuracy.md``, ``tests/test_accuracy_bounds.py``).

>>> spence(np.array([0.0, 1.0, 2.0, 0.5]))   # π²/6, 0, −π²/12, π²/12 − log²2 / 2
array([ 1.64493407,  0.        , -0.82246703,  0.58224053])
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

#: π²/6 as hi + lo (their sum to 1e-33)
PI2_6_HI, PI2_6_LO = 1.6449340668482264, 3.040672350398476e-17


def _bernoulli(n: int) -> list[Fraction]:
    """B₀ … Bₙ (B₁ = −1/2), exactly, by Σₖ C(m + 1, k) Bₖ = 0."""
    b: list[Fraction] = []
    for m in range(n + 1):
        b.append(Fraction(1) if m == 0 else
                 -sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


#: B₂ₖ / (2k + 1)!, k = 1 … 20: the odd powers u³, u⁵ … of the series past u − u²/4;
#: at |u| = log 4 the last term is ~1e-26 of the first
_EVEN = tuple(float(b / math.factorial(2 * k + 1))
              for k, b in enumerate(_bernoulli(40)[2::2], start=1))


def _li2(u: np.ndarray) -> np.ndarray:
    """Li₂(z) from u = −log(1 − z): u − u²/4 + u³ Σₖ B₂ₖ u²⁽ᵏ⁻¹⁾/(2k + 1)!."""
    w = u * u
    tail = np.zeros_like(u)
    for c in reversed(_EVEN):  # Horner's rule in u²
        tail = tail * w + c
    return (u * w * tail - 0.25 * w) + u


def spence(x: Any) -> Any:
    """spence(x) = ∫₁ˣ log t / (1 − t) dt = Li₂(1 − x) for real x ≥ 0 (NaN below), as
    ``scipy.special.spence``; float64 (float32 for float32), a number for a number."""
    x = np.asarray(x)
    single = x.dtype == np.float32
    flat = np.ravel(x).astype(np.float64)
    out = np.full_like(flat, np.nan)
    with np.errstate(all="ignore"):
        mid = (flat >= 0.25) & (flat <= 4.0)
        out[mid] = _li2(0.0 - np.log(flat[mid]))  # (0 − 0 is +0: spence(1) = 0, as SciPy)
        low = (flat > 0.0) & (flat < 0.25)
        out[low] = _reflected(flat[low])
        high = flat > 4.0
        y = 1.0 / flat[high]
        near = y >= 0.25
        inverse = np.where(near, _li2(0.0 - np.log(y)), _reflected(np.where(near, 0.125, y)))
        out[high] = -inverse - 0.5 * np.log(flat[high]) ** 2
        out[flat == 0.0] = PI2_6_HI
    out = out.reshape(x.shape).astype(np.float32 if single else np.float64, copy=False)
    return out[()] if out.ndim == 0 else out


def _reflected(x: np.ndarray) -> np.ndarray:
    """spence(x) for 0 < x < 1/4: π²/6 − log x · log1p(−x) − Li₂(x)."""
    down = np.log1p(-x)
    return (PI2_6_HI - (np.log(x) * down + _li2(-down))) + PI2_6_LO
