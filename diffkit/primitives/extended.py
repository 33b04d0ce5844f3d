"""Extended precision where numpy has it: x86's 64-bit long double (Windows and ARM macOS
have none: there numpy's long double is a double, and ``EXTENDED`` is False).

A formula whose terms cancel keeps 11 more bits computed this way and rounded once: the
reflection formula of digamma next to its zeros (:mod:`.polygamma_negative`), sinc's
derivative next to its extrema (:mod:`.sinc_derivative`).

>>> s, c = sincospi(np.array([0.5, 1.0 / 3.0]))
>>> [float(v) for v in s], round(float(c[1]), 15)
([1.0, 0.8660254037844386], 0.5)
"""

from __future__ import annotations

import numpy as np

from .inverse_error import _product

EXTENDED = np.finfo(np.longdouble).nmant >= 63
PI_LO = 1.2246467991473532e-16  # π − np.pi
PI = np.longdouble(np.pi) + np.longdouble(PI_LO)  # (π to 64 bits where long double has them)


def pi_times(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """πr as two doubles, hi + lo (Dekker's product by np.pi, and π − np.pi times r)."""
    hi, lo = _product(np.full_like(r, np.pi), r)
    return hi, lo + PI_LO * r


def sincospi(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin πx and cos πx in long double for a float array x: from r = x − rint(x) (exact),
    the sign (−1)^rint(x), and beyond |r| = 1/4 from u = 1/2 − |r| (exact), where cos πr is
    small and would take the rounding of πr: cos πr = sin πu, sin πr = sign(r) cos πu."""
    n = np.rint(x)
    r = x - n
    parity = np.where(np.fmod(n, 2.0) == 0, 1.0, -1.0).astype(np.longdouble)
    folded = np.abs(r) > 0.25
    u = np.where(folded, 0.5 - np.abs(r), r).astype(np.longdouble)
    s, c = np.sin(PI * u), np.cos(PI * u)
    return (parity * np.where(folded, np.sign(r) * c, s),
            parity * np.where(folded, s, c))
