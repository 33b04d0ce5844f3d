"""Which primitives differentiate complex values correctly, and the refusal of the others.

Derivatives of complex values follow JAX's convention (docs/complex.md): a JVP is the
real-linear map ``x_dot -> y_dot``, and a VJP its transpose for the pairing
``<u, v> = Re sum(u v)``, with no complex conjugation. A holomorphic rule written for the
reals (``x_dot * cos(x)``, ``matmul(z_bar, yᵀ)``) is then right for complex values as it
stands; the primitives that are not holomorphic (``real``, ``imag``, ``conj``, ``abs``,
``logabsdet``, the Hermitian ``eigh`` ...) have complex branches in their own rules.

A primitive whose entry says ``complex=True`` has been checked for complex values against
finite differences in the real and the imaginary direction (tests/test_complex_rules.py):
the holomorphic ones (sin, exp, matmul, fft, the reductions and views …) and those whose
rules have complex branches of their own (real, imag, conj, abs, logabsdet, irfft,
cholesky, eigh, eig, svd, qr, pinv; rfft takes real signals only, as JAX's). Any other one
(``floor``, ``sign``, ``logsumexp``, most special functions ...) refuses a complex value being
differentiated: one clear error, not a derivative that would be silently wrong.

>>> from diffkit.primitives import table
>>> table()["sin"].complex, table()["floor"].complex
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import NotApplicable, Primitive
from .elementwise import is_complex

def refuse_complex(prim: Primitive, values: Sequence[Any]) -> None:
    """Raise NotApplicable (a comparison's cell is ``n/a``) when ``prim`` has no complex
    rule and one of ``values`` is complex."""
    if not prim.complex and any(is_complex(v) for v in values):
        raise NotApplicable(
            f"{prim.name} has no derivative rule for complex values in diffkit (it is not "
            "holomorphic, or not defined for them); differentiate a real function of the "
            "real and imaginary parts instead (dnp.real(z), dnp.imag(z)), see docs/complex.md")
