"""sinc'(x) = (πx cos πx − sin πx)/(πx²) and sinc''(x) on numbers, sinc(x) = sin πx/(πx).

The two terms of the numerator agree next to each extremum of sinc (where tan πx = πx, the
zeros of sinc'): in doubles, ``(cos πx − sinc x)/x`` loses the digits they share (142 ulps
at x = 8.4886, and without bound closer); sinc'' = −π² sinc − 2 sinc'/x next to its own
zeros (4762 ulps at x = −0.663). In 64-bit long double (:mod:`.extended`), sin πx and
cos πx from x − rint(x) exact, rounded once: within an ulp but within 1e-4 of a zero. Near
0, where the quotients divide 0 by 0, the Taylor series (``SERIES``). Where numpy's long
double is a double, the same formulas in doubles.

>>> float(sinc_derivative(np.array(0.5)))  # −1/(π/2 · 1/2) = −4/π
-1.2732395447351628
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .extended import PI, sincospi

#: d sinc/dx = Σₙ (−1)ⁿ 2n π²ⁿ x^(2n−1)/(2n + 1)!, n = 1 … 8, for |x| < 0.15 (``NEAR``),
#: where its error is below 3e-16
SERIES = tuple((-1) ** n * 2 * n * np.pi ** (2 * n) / float(np.prod(np.arange(1.0, 2 * n + 2)))
               for n in range(1, 9))
NEAR = 0.15


def sinc_derivative(x: Any, *, n: int = 1) -> Any:
    """sinc'(x) (n = 1) or sinc''(x) (n = 2) for a real float array (or number): sinc'' as
    −π² sinc(x) − 2 sinc'(x)/x (sinc's equation x y'' + 2y' + π² x y = 0), in long double
    too (it cancels next to its own zeros)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(all="ignore"):
        xx = x * x
        series = np.zeros_like(x)
        for k, c in reversed(list(enumerate(SERIES, start=1))):  # Horner's rule in x²
            series = series * xx + (c if n == 1 else c * (2 * k - 1))
        near = np.abs(x) < NEAR
        safe = np.where(near, 1.0, x)
        s, c = sincospi(safe)  # (in doubles where numpy's long double is one)
        big = safe.astype(np.longdouble)
        value = s / (PI * big)
        slope = (PI * big * c - s) / (PI * big * big)
        far = slope if n == 1 else -PI * PI * value - 2 * slope / big
        out = np.where(near, series * x if n == 1 else series, np.asarray(far, dtype=np.float64))
    return out[()] if out.ndim == 0 else out
