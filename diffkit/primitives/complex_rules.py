"""Which primitives differentiate complex values correctly, and the refusal of the others.

Derivatives of complex values follow JAX's convention (docs/complex.md): a JVP is the
real-linear map ``x_dot -> y_dot``, and a VJP its transpose for the pairing
``<u, v> = Re sum(u v)``, with no complex conjugation. A holomorphic rule written for the
reals (``x_dot * cos(x)``, ``matmul(z_bar, yᵀ)``) is then right for complex values as it
stands; the primitives that are not holomorphic (``real``, ``imag``, ``conj``, ``abs``,
``logabsdet``, the Hermitian ``eigh`` ...) have complex branches in their own rules.

A primitive listed here has been checked for complex values against finite differences
in the real and the imaginary direction (tests/test_complex_rules.py). Any other one
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
from .compare import select
from .elementwise import is_complex

HOLOMORPHIC = (  # rules written for the reals that hold for complex values as they are
    "neg", "add", "sub", "mul", "div", "power", "exp", "log", "log1p", "sqrt", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "exp2", "expm1", "arcsinh",
    "arccosh", "arctanh", "sigmoid",
    "sum", "prod", "cumsum", "cumprod", "broadcast_to", "reshape", "transpose", "getitem",
    "scatter_add", "concatenate", "gather", "scatter", "where",
    "matmul", "einsum", "inv", "solve", "det", "adjugate", "fft", "ifft", "erf", "erfc",
    "sqrtm", "solve_sylvester", "expm",
    "maximum", "minimum", "max", "min")  # (the last four select entries: numpy's order on
# complex values is lexicographic, and the derivative is that of the entry selected)
NOT_HOLOMORPHIC = ("real", "imag", "conj", "abs", "logabsdet", "irfft", "cholesky", "eigh",
                   "eig", "svd", "qr", "pinv")  # (complex branches
# in their rules; rfft is not listed: it takes real signals only, as JAX's)


def mark(table: dict[str, Primitive]) -> None:
    """Set ``complex`` on the primitives of the two lists above."""
    for name in HOLOMORPHIC + NOT_HOLOMORPHIC:
        if name in table:
            table[name].complex = True
    select.complex = True  # (not in the table: masks are not differentiated)


def refuse_complex(prim: Primitive, values: Sequence[Any]) -> None:
    """Raise NotApplicable (a comparison's cell is ``n/a``) when ``prim`` has no complex
    rule and one of ``values`` is complex."""
    if not prim.complex and any(is_complex(v) for v in values):
        raise NotApplicable(
            f"{prim.name} has no derivative rule for complex values in diffkit (it is not "
            "holomorphic, or not defined for them); differentiate a real function of the "
            "real and imaginary parts instead (dnp.real(z), dnp.imag(z)), see docs/complex.md")
