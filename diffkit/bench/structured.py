"""Catalog functions with structure: sparse Jacobians and Hessians, and a long scalar chain.

* ``bratu``: the 2-D Bratu residual on an m × m interior grid (n = m², zero boundary; other
  n: an m × n/m grid),
  ``4u - (four neighbours) - h² λ eᵘ``: the 5-point Laplacian's pattern;
* ``chained_rosenbrock``: Σ 4 (x_{i-1} - x_i²)² + (1 - x_i)² (Lukšan and Vlček's chained
  Rosenbrock), a tridiagonal Hessian;
* ``banded_least_squares``: Broyden's banded residual (Moré, Garbow and Hillstrom, no. 31),
  r_i = x_i (2 + 5 x_i²) + 1 - Σ_{j ∈ J_i} x_j (1 + x_j), J_i = {i-5, ..., i+1} \\ {i}:
  seven diagonals;
* ``arrowhead`` and ``random_sparse``: residuals for the dense-against-coloured figure;
* ``taylor_chain``: a scalar program of ten primitives per step (200 at depth 20), written
  over a namespace of functions so that mpmath can run it too (the 40-digit reference of
  its high derivatives).

>>> import numpy as np
>>> bratu(np.zeros(9)).tolist() == [-1.0 / 16.0] * 9
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp

LAMBDA = 1.0  # Bratu's parameter (solutions exist for λ below about 6.8)


def bratu(u: Any) -> Any:
    """The 2-D Bratu residual on an m × k interior grid (m k = n, m the largest divisor of
    n up to √n: a square when n is one), spacing h = 1/(k + 1)."""
    n = u.shape[0]
    m = max(d for d in range(1, int(np.sqrt(n)) + 1) if n % d == 0)
    k = n // m
    h2 = 1.0 / (k + 1) ** 2
    side, top = np.zeros((m, 1)), np.zeros((1, k + 2))  # the zero boundary
    grid = dnp.concatenate([top, dnp.concatenate([side, dnp.reshape(u, (m, k)), side], axis=1),
                            top], axis=0)
    centre = grid[1:-1, 1:-1]
    neighbours = grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:]
    return dnp.reshape(4.0 * centre - neighbours - h2 * LAMBDA * dnp.exp(centre), (-1,))


def chained_rosenbrock(x: Any) -> Any:
    """Σ_{i ≥ 1} 4 (x_{i-1} - x_i²)² + (1 - x_i)²: a tridiagonal Hessian."""
    return dnp.sum(4.0 * (x[:-1] - x[1:] ** 2) ** 2 + (1.0 - x[1:]) ** 2)


def _shifted(v: Any, k: int) -> Any:
    """``v`` moved by k places (entry i holds v[i + k]), zeros where that is outside."""
    n = v.shape[0]
    if abs(k) >= n:
        return 0.0 * v
    zeros = np.zeros(abs(k))
    return dnp.concatenate([v[k:], zeros]) if k > 0 else dnp.concatenate([zeros, v[:n + k]])


def banded_least_squares(x: Any) -> Any:
    """Broyden's banded residual: five diagonals below, one above, the main one."""
    g = x * (1.0 + x)
    others = sum(_shifted(g, k) for k in (-5, -4, -3, -2, -1, 1))
    return x * (2.0 + 5.0 * x * x) + 1.0 - others


def arrowhead(x: Any) -> Any:
    """x_i² + x_0 x_i for i ≥ 1, and Σ x² in entry 0: a dense first row and column."""
    head = dnp.reshape(dnp.sum(x * x), (1,))
    return dnp.concatenate([head, x[1:] * x[1:] + x[0] * x[1:]])


def random_sparse(x: Any, per_row: int = 3) -> Any:
    """tanh(A x), A a fixed-seed random sparse matrix with ``per_row`` entries a row."""
    n = x.shape[0]
    rng = np.random.default_rng(n)
    cols, weights = rng.integers(0, n, size=(n, per_row)), rng.standard_normal((n, per_row))
    return dnp.tanh(dnp.sum(weights * x[cols], axis=1))


def taylor_chain(x: Any, depth: int = 20, m: Any = dnp) -> Any:
    """v ← e^{sin(v)/2} √(1 + v²) / (2 + cos v), ``depth`` times: ten primitives a step;
    ``m`` gives sin, cos, exp and sqrt (``diffkit.numpy``, or mpmath)."""
    v = x
    for _ in range(depth):
        v = m.exp(0.5 * m.sin(v)) * m.sqrt(1.0 + v * v) / (2.0 + m.cos(v))
    return v

