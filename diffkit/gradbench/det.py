"""GradBench's ``det``: the determinant by expansion by minors (cmpad's ``det_by_minor``).

det A = Σⱼ (−1)ʲ A₀ⱼ det M₀ⱼ, recursively down to 1 × 1 minors: about e·ℓ! products, a
source of floating-point work rather than a way to compute a determinant. Functions:
``primal`` (det A) and ``gradient`` (∂det/∂A, row-major). Input ``{"A": [...], "ell": ℓ}``
with A row-major; GradBench draws A uniform on [0, 1) after ``np.random.seed(31337)``, one
matrix per size, sizes ``5`` … ``11`` (ℓ).

Written without recursion, as GradBench's commentary suggests for array libraries, and
with the recursion's own products: the expansion's tree is walked one row at a time. A
node at depth k is an ordered choice of k distinct columns for rows 0 … k−1, carrying the
product of its signed entries; its children take row k's entries in the remaining
columns, in increasing order, with alternating signs (the sign of the term in the minor's
expansion). The leaves are the ℓ! signed products; det A is their sum. Each level is one
gather of row k and one product, so every backend sees ℓ array operations, not ℓ! scalar
ones; the number of multiplications is the recursion's, Σₖ ℓ!/(ℓ−k)!.

By hand: det A is linear in row i with coefficients the cofactors, so ∂det/∂Aᵢⱼ =
(−1)ⁱ⁺ʲ det Mᵢⱼ (Mᵢⱼ: A without row i and column j), each minor's determinant by LU.

>>> import numpy as np
>>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> float(det(A)), np.round(gradient_by_hand(A), 12).tolist()
(-2.0, [[4.0, -3.0], [-2.0, 1.0]])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from .common import Eval, InputError, Prepared, Runner, floats, gradient_runner, integer, \
    legacy_draws, primal_runner, to_json

SEED = 31337
ELL = (5, 6, 7, 8, 9, 10, 11)
SIZES = tuple(str(ell) for ell in ELL)


@functools.lru_cache(maxsize=4)
def tree(ell: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per row k: (the column of each child, node by node, ℓ−k children each in increasing
    column order; the children's alternating signs). Built once per ℓ, with arrays."""
    remaining = np.arange(ell, dtype=np.int16)[None, :]    # the root's remaining columns
    levels = []
    for k in range(ell):
        width = ell - k
        levels.append((remaining.reshape(-1).astype(np.intp),
                       np.where(np.arange(width) % 2 == 0, 1.0, -1.0)))
        if width > 1:
            keep = np.array([[c for c in range(width) if c != j] for j in range(width)])
            remaining = remaining[:, keep].reshape(-1, width - 1)
    return tuple(levels)


def det(A: Any) -> Any:
    """det A by expansion by minors, row by row, in :mod:`diffkit.numpy`."""
    products = None
    for k, (cols, signs) in enumerate(tree(A.shape[0])):
        factors = dnp.multiply(dnp.reshape(A[k][cols], (-1, signs.size)), signs)
        products = factors if products is None else products[:, None] * factors
        products = dnp.reshape(products, (-1,))
    return dnp.sum(products)


def primal_by_hand(A: np.ndarray) -> float:
    return float(np.linalg.det(A))


def gradient_by_hand(A: np.ndarray) -> np.ndarray:
    """The cofactor matrix: (−1)ⁱ⁺ʲ det Mᵢⱼ."""
    ell = A.shape[0]
    if ell == 1:
        return np.ones((1, 1))
    out = np.empty_like(A)
    for i in range(ell):
        for j in range(ell):
            minor = np.delete(np.delete(A, i, axis=0), j, axis=1)
            out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def inputs(size: str) -> dict[str, Any]:
    draws = [(str(ell), lambda rs, ell=ell: {"A": rs.rand(ell * ell).tolist(), "ell": ell})
             for ell in ELL]
    return legacy_draws(SEED, draws, size)


def prepare(input: dict[str, Any]) -> Prepared:
    ell = integer(input, "ell", 1)
    A = floats(input, "A", 1)
    if A.size != ell * ell:
        raise InputError(f"field 'A' has {A.size} entries; ell={ell} makes it {ell * ell}")
    return (), (A.reshape(ell, ell),)


def build(function: str, backend: Backend) -> Runner:
    return primal_runner(det, backend) if function == "primal" else gradient_runner(det, backend)


def output(function: str, result: Any) -> Any:
    return to_json(np.reshape(result, -1) if function == "gradient" else result)


def reference(function: str, input: dict[str, Any]) -> Any:
    _, (A,) = prepare(input)
    return primal_by_hand(A) if function == "primal" else gradient_by_hand(A).reshape(-1).tolist()


EVAL = Eval("det", ("primal", "gradient"), SIZES, inputs, prepare, build, output, reference,
            "determinant by expansion by minors, and its gradient")
