"""The catalog: named test functions the harness, the CLI and the reports run on.

Each entry is a plain Python function over :mod:`diffkit.numpy` plus what a comparison
needs to know about it: which derivative it asks for (``kind``), its input dimension
(fixed, or scalable with ``n``), a depth parameter where it has one, a default point,
its domain, and whether it has a closed form (no value-dependent control flow).

>>> f, x = get("rosenbrock").make(n=3)
>>> x
array([-1.2,  1. , -1.2])
>>> round(float(f(x)), 6)
508.2

Default points are chosen away from zeros of the derivative (so relative errors mean
something) and inside the domain, except the ``non-smooth`` entries named ``*_kink`` and
``max_tie``, which sit ON the kink on purpose. There diffkit's convention is: the
derivative of ``abs`` and ``relu`` at 0 is 0, and tied arguments of ``maximum`` /
``minimum`` / ``max`` / ``min`` share the derivative equally (1/2 each for two), as in
JAX and PyTorch; so d/dx max(x, 1 - x) at x = 1/2 is 1/2 - 1/2 = 0.

Data for the machine-learning entries is drawn with a fixed seed
(``np.random.default_rng(0)``) on first use and cached, so importing the catalog is cheap.
Control-flow entries test ``np.any(...)`` so they also run elementwise on arrays (every
entry iterates, or recurses, until all are done); only ``piecewise``, whose ``if/elif``
picks a different formula per value, takes one scalar at a time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .. import numpy as dnp
from . import structured
from ..core import DiffkitError
from .iterative import PROBLEMS as _ITERATIVE
from .workloads import rosenbrock


@dataclass(frozen=True)
class Entry:
    """One catalog function.

    ``fn(x, **params)`` is the function; ``point(n)`` gives the default evaluation point
    (an array of ``n`` entries when ``n`` is not None, else a float or fixed array);
    ``params`` are keyword parameters passed to ``fn`` (``depth`` among them when the
    function has one).
    """

    name: str
    fn: Callable[..., Any]
    kind: str                       # derivative | grad | jacobian
    description: str
    point: Callable[[int | None], Any]
    domain: str = "all reals"
    closed_form: bool = True
    n: int | None = None            # default dimension when scalable, else None
    depth: int | None = None        # default depth when the function has one
    group: str = ""

    @property
    def scalable(self) -> bool:
        return self.n is not None

    def make(self, n: int | None = None, depth: int | None = None) -> tuple[Callable, Any]:
        """The function with its parameters bound, and its default point."""
        if n is not None and not self.scalable:
            raise DiffkitError(f"{self.name} has a fixed input dimension; --dim does not apply")
        if depth is not None and self.depth is None:
            raise DiffkitError(f"{self.name} has no depth parameter; --depth does not apply")
        if n is not None and (not isinstance(n, (int, np.integer)) or n < 2):
            raise DiffkitError(f"{self.name}: the dimension must be an integer >= 2, got {n!r}")
        if depth is not None and (not isinstance(depth, (int, np.integer)) or depth < 1):
            raise DiffkitError(f"{self.name}: the depth must be an integer >= 1, got {depth!r}")
        kwargs = {"depth": self.depth if depth is None else int(depth)} if self.depth else {}
        f = partial(self.fn, **kwargs) if kwargs else self.fn
        return f, self.point(self.n if n is None else int(n))

    def metadata(self) -> dict[str, Any]:
        """Plain data describing the entry (for ``diffkit list``)."""
        x = self.point(self.n)
        return {"name": self.name, "group": self.group, "kind": self.kind,
                "dim": self.n if self.scalable else int(np.size(x)),
                "scalable": self.scalable, "depth": self.depth, "domain": self.domain,
                "closed_form": self.closed_form, "description": self.description}


# =========================================================================== point helpers


def _at(value: Any) -> Callable[[int | None], Any]:
    """A fixed point (a fresh copy each call, so callers may modify it)."""
    if np.ndim(value) == 0:
        v = float(value)
        return lambda n: v
    arr = np.array(value, dtype=float)
    return lambda n: arr.copy()


def _ramp(lo: float, hi: float) -> Callable[[int | None], np.ndarray]:
    """``n`` points evenly spread over [lo, hi] (n = None is treated as 2)."""
    return lambda n: np.linspace(lo, hi, 2 if n is None else n)


# =========================================================================== scalar classics


def _exp(x: Any) -> Any:
    return dnp.exp(x)


def _sin(x: Any) -> Any:
    return dnp.sin(x)


def _cbrt(x: Any) -> Any:
    return x ** (1 / 3)


def _log(x: Any) -> Any:
    return dnp.log(x)


def _runge(x: Any) -> Any:
    return 1.0 / (1.0 + 25.0 * x ** 2)


def _exp_sin_20x(x: Any) -> Any:
    return dnp.exp(dnp.sin(20.0 * x))


def _tanh(x: Any) -> Any:
    return dnp.tanh(x)


def _sigmoid(x: Any) -> Any:
    return dnp.sigmoid(x)


# =========================================================================== optimization


def _rosenbrock(x: Any) -> Any:
    return rosenbrock(x)


def _beale(x: Any) -> Any:
    a, b = x[0], x[1]
    return ((1.5 - a + a * b) ** 2 + (2.25 - a + a * b ** 2) ** 2
            + (2.625 - a + a * b ** 3) ** 2)


def _booth(x: Any) -> Any:
    a, b = x[0], x[1]
    return (a + 2.0 * b - 7.0) ** 2 + (2.0 * a + b - 5.0) ** 2


def _himmelblau(x: Any) -> Any:
    a, b = x[0], x[1]
    return (a ** 2 + b - 11.0) ** 2 + (a + b ** 2 - 7.0) ** 2


def _ackley(x: Any) -> Any:
    r = dnp.sqrt(dnp.mean(x ** 2))
    return (-20.0 * dnp.exp(-0.2 * r) - dnp.exp(dnp.mean(dnp.cos(2.0 * np.pi * x)))
            + 20.0 + np.e)


def _rastrigin(x: Any) -> Any:
    return 10.0 * x.shape[0] + dnp.sum(x ** 2 - 10.0 * dnp.cos(2.0 * np.pi * x))


def _styblinski_tang(x: Any) -> Any:
    return 0.5 * dnp.sum(x ** 4 - 16.0 * x ** 2 + 5.0 * x)


def _griewank(x: Any) -> Any:
    i = np.arange(1, x.shape[0] + 1, dtype=float)
    return 1.0 + dnp.sum(x ** 2) / 4000.0 - dnp.prod(dnp.cos(x / np.sqrt(i)))


def _sum_of_squares(x: Any) -> Any:
    return dnp.sum(x ** 2)


# =========================================================================== AD classics


def _speelpenning(x: Any) -> Any:
    return dnp.prod(x)


def _logistic_map(x: Any, depth: int) -> Any:
    for _ in range(depth):
        x = 4.0 * x * (1.0 - x)
    return x


def _nested_sin(x: Any, depth: int) -> Any:
    for _ in range(depth):
        x = dnp.sin(x)
    return x


def _sin_product(x: Any) -> Any:
    return dnp.prod(dnp.sin(x))


def _polynomial(x: Any, depth: int) -> Any:
    """1 + x + ... + x^depth by Horner's rule: depth nested multiply-adds."""
    y = 1.0
    for _ in range(depth):
        y = y * x + 1.0
    return y


# =========================================================================== machine learning


@functools.cache
def _logreg_data(n: int, m: int = 50) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, n))
    w_true = rng.normal(size=n)
    y = np.where(X @ w_true + 0.5 * rng.normal(size=m) >= 0.0, 1.0, -1.0)
    return X, y


def _logistic_regression(w: Any) -> Any:
    X, y = _logreg_data(w.shape[0])
    return dnp.mean(dnp.log1p(dnp.exp(-y * dnp.matmul(X, w))))


_SCE_DIM, _SCE_CLASSES, _SCE_M = 4, 3, 20


@functools.cache
def _sce_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(_SCE_M, _SCE_DIM))
    labels = rng.integers(0, _SCE_CLASSES, size=_SCE_M)
    return X, labels


def _softmax_cross_entropy(w: Any) -> Any:
    X, labels = _sce_data()
    W = dnp.reshape(w, (_SCE_DIM, _SCE_CLASSES))
    Z = dnp.matmul(X, W)
    return dnp.mean(dnp.logsumexp(Z, axis=1) - Z[np.arange(_SCE_M), labels])


@functools.cache
def _lsq_data(n: int, m: int = 30) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(m, n)), rng.normal(size=m)


def _least_squares(x: Any) -> Any:
    A, b = _lsq_data(x.shape[0])
    r = dnp.matmul(A, x) - b
    return 0.5 * dnp.sum(r ** 2)


_MLP_IN, _MLP_HIDDEN, _MLP_M = 3, 4, 20
_MLP_SIZE = _MLP_IN * _MLP_HIDDEN + _MLP_HIDDEN + _MLP_HIDDEN + 1


@functools.cache
def _mlp_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(_MLP_M, _MLP_IN))
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    return X, t


def _mlp_loss(p: Any) -> Any:
    X, t = _mlp_data()
    k = _MLP_IN * _MLP_HIDDEN
    W1 = dnp.reshape(p[:k], (_MLP_IN, _MLP_HIDDEN))
    b1 = p[k:k + _MLP_HIDDEN]
    W2 = p[k + _MLP_HIDDEN:k + 2 * _MLP_HIDDEN]
    b2 = p[k + 2 * _MLP_HIDDEN]
    pred = dnp.matmul(dnp.tanh(dnp.matmul(X, W1) + b1), W2) + b2
    return 0.5 * dnp.mean((pred - t) ** 2)


@functools.cache
def _mlp_point() -> np.ndarray:
    return 0.5 * np.random.default_rng(1).normal(size=_MLP_SIZE)


@functools.cache
def _sce_point() -> np.ndarray:
    return 0.3 * np.random.default_rng(1).normal(size=_SCE_DIM * _SCE_CLASSES)


# =========================================================================== control flow


def _piecewise(x: Any) -> Any:
    """exp(x) for x < 0, 1 + sin(x) on [0, 1), 1 + sin(1) + log(x) from 1: an if/elif."""
    if x < 0.0:
        return dnp.exp(x)
    elif x < 1.0:
        return 1.0 + dnp.sin(x)
    return 1.0 + np.sin(1.0) + dnp.log(x)


def _where_piecewise(x: Any) -> Any:
    """The same function as ``piecewise``, branch-free: a closed form (Piecewise)."""
    safe = dnp.where(x >= 1.0, x, 1.0)  # double where: log never sees x < 1, nor its adjoint
    return dnp.where(x < 0.0, dnp.exp(dnp.where(x < 0.0, x, 0.0)),
                     dnp.where(x < 1.0, 1.0 + dnp.sin(x), 1.0 + np.sin(1.0) + dnp.log(safe)))


def _until_converged(y: Any, a: Any, residual: Callable[[Any], Any],
                     step: Callable[[Any], Any]) -> Any:
    """``y = step(y)`` until ``|residual(y)| <= 1e-12 a`` everywhere: the trip count depends
    on the value of ``a``."""
    while np.any(dnp.abs(residual(y)) > 1e-12 * a):
        y = step(y)
    return y


def _babylonian_sqrt(a: Any) -> Any:
    return _until_converged(0.5 * (a + 1.0), a, lambda y: y * y - a, lambda y: 0.5 * (y + a / y))


def _newton_cbrt(a: Any) -> Any:
    return _until_converged(1.0 + 0.0 * a, a, lambda y: y ** 3 - a,
                            lambda y: (2.0 * y + a / y ** 2) / 3.0)


def _recursive_exp(x: Any) -> Any:
    """exp(x) = exp(x/2)^2 recursively until |x| <= 1/2, then a degree-16 Taylor polynomial."""
    if np.any(dnp.abs(x) > 0.5):
        r = _recursive_exp(x / 2.0)
        return r * r
    y = 1.0
    for k in range(16, 0, -1):
        y = 1.0 + x * y / float(k)
    return y


# =========================================================================== vector-valued


@functools.cache
def _tanh_ax_matrix(m: int, n: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(m, n)) / np.sqrt(n)


def tanh_ax(x: Any, m: int = 3) -> Any:
    """tanh(A x), A a fixed-seed m×n matrix (n = len(x)): a Jacobian of shape (m, n).

    >>> tanh_ax(np.zeros(4), m=2)
    array([0., 0.])
    """
    return dnp.tanh(dnp.matmul(_tanh_ax_matrix(m, x.shape[0]), x))


def _broyden(x: Any) -> Any:
    z = np.zeros(1)
    xp = dnp.concatenate([z, x, z])
    return (3.0 - 2.0 * x) * x - xp[:-2] - 2.0 * xp[2:] + 1.0


def _polar_to_cartesian(x: Any) -> Any:
    r, theta = x[0], x[1]
    return dnp.stack([r * dnp.cos(theta), r * dnp.sin(theta)])


def _softmax(x: Any) -> Any:
    return dnp.exp(x - dnp.logsumexp(x))


# =========================================================================== non-smooth


def _abs(x: Any) -> Any:
    return dnp.abs(x)


def _relu(x: Any) -> Any:
    return dnp.relu(x)


def _max_of_two(x: Any) -> Any:
    return dnp.maximum(x, 1.0 - x)


# =========================================================================== the catalog

_S, _O, _A, _M = "scalar", "optimization", "AD classics", "machine learning"
_C, _V, _N = "control flow", "vector-valued", "non-smooth"

ENTRIES: list[Entry] = [
    # ---------------------------------------------------------------- scalar
    Entry("exp", _exp, "derivative", "exp(x): its own derivative",
          point=_at(1.0), group=_S),
    Entry("sin_small", _sin, "derivative", "sin(x) near 0 (x = 1e-3), derivative cos x ~ 1",
          point=_at(1e-3), group=_S),
    Entry("sin_large", _sin, "derivative", "sin(x) at x = 10: argument reduction matters",
          point=_at(10.0), group=_S),
    Entry("cbrt_near_zero", _cbrt, "derivative",
          "x ** (1/3) near 0 (x = 0.01): derivative x^(-2/3)/3 blows up at 0",
          point=_at(0.01), domain="x > 0", group=_S),
    Entry("log_near_zero", _log, "derivative", "log(x) near 0 (x = 1e-3): derivative 1/x = 1000",
          point=_at(1e-3), domain="x > 0", group=_S),
    Entry("runge", _runge, "derivative", "Runge's function 1/(1 + 25 x^2)",
          point=_at(0.3), group=_S),
    Entry("exp_sin_20x", _exp_sin_20x, "derivative",
          "exp(sin(20 x)): smooth, but its k-th derivative grows like 20^k",
          point=_at(0.1), group=_S),
    Entry("tanh", _tanh, "derivative", "tanh(x), derivative 1 - tanh^2",
          point=_at(0.5), group=_S),
    Entry("sigmoid", _sigmoid, "derivative", "the logistic sigmoid 1/(1 + exp(-x))",
          point=_at(0.5), group=_S),
    # ---------------------------------------------------------------- optimization
    Entry("rosenbrock", _rosenbrock, "grad", "Rosenbrock's banana valley, sum over n-1 pairs",
          point=lambda n: np.resize([-1.2, 1.0], n or 2), n=2, group=_O),
    Entry("beale", _beale, "grad", "Beale's function (2-D), minimum at (3, 0.5)",
          point=_at([1.0, 1.5]), domain="[-4.5, 4.5]^2", group=_O),
    Entry("booth", _booth, "grad", "Booth's quadratic (2-D), minimum at (1, 3)",
          point=_at([0.0, 0.0]), domain="[-10, 10]^2", group=_O),
    Entry("himmelblau", _himmelblau, "grad", "Himmelblau's function (2-D), four minima",
          point=_at([0.5, 1.0]), domain="[-5, 5]^2", group=_O),
    Entry("ackley", _ackley, "grad", "Ackley's function: many local minima around a sqrt cone",
          point=_ramp(0.3, 1.7), domain="[-32.768, 32.768]^n, x != 0", n=5, group=_O),
    Entry("rastrigin", _rastrigin, "grad", "Rastrigin's function: a parabola with cosine ripples",
          point=_ramp(0.3, 1.7), domain="[-5.12, 5.12]^n", n=5, group=_O),
    Entry("styblinski_tang", _styblinski_tang, "grad",
          "Styblinski-Tang: 0.5 sum(x^4 - 16 x^2 + 5 x)",
          point=_ramp(-2.0, 2.0), domain="[-5, 5]^n", n=5, group=_O),
    Entry("griewank", _griewank, "grad",
          "Griewank: 1 + |x|^2/4000 - prod cos(x_i / sqrt i)",
          point=_ramp(0.5, 3.0), domain="[-600, 600]^n", n=5, group=_O),
    Entry("chained_rosenbrock", structured.chained_rosenbrock, "grad",
          "chained Rosenbrock sum 4 (x_{i-1} - x_i^2)^2 + (1 - x_i)^2: a tridiagonal Hessian",
          point=_ramp(-1.2, 1.0), n=10, group=_O),
    Entry("sum_of_squares", _sum_of_squares, "grad", "the sphere sum(x^2): gradient 2x",
          point=_ramp(-1.0, 2.0), n=5, group=_O),
    # ---------------------------------------------------------------- AD classics
    Entry("speelpenning", _speelpenning, "grad",
          "Speelpenning's product prod(x): gradient prod/x_i, cheap in reverse mode",
          point=_ramp(0.5, 1.5), n=8, group=_A),
    Entry("logistic_map", _logistic_map, "derivative",
          "the logistic map l_{k+1} = 4 l_k (1 - l_k) iterated depth times: expression swell",
          point=_at(0.3), domain="[0, 1]", depth=4, group=_A),
    Entry("taylor_chain", structured.taylor_chain, "derivative",
          "v <- exp(sin(v)/2) sqrt(1 + v^2) / (2 + cos v), depth times: ten primitives a step",
          point=_at(0.3), depth=4, group=_A),
    Entry("nested_sin", _nested_sin, "derivative", "sin(sin(...sin(x))) nested depth times",
          point=_at(1.0), depth=5, group=_A),
    Entry("sin_product", _sin_product, "grad",
          "prod(sin(x_i)): every partial derivative involves all n inputs",
          point=_ramp(0.3, 1.2), domain="x_i not multiples of pi", n=5, group=_A),
    Entry("polynomial", _polynomial, "derivative",
          "1 + x + ... + x^depth evaluated by Horner's rule: a deep chain of multiply-adds",
          point=_at(0.9), depth=8, group=_A),
    # ---------------------------------------------------------------- machine learning
    Entry("logistic_regression", _logistic_regression, "grad",
          "mean log(1 + exp(-y Xw)) on fixed-seed data (50 samples, labels +-1)",
          point=lambda n: np.linspace(-0.5, 0.5, n or 5), n=5, group=_M),
    Entry("softmax_cross_entropy", _softmax_cross_entropy, "grad",
          "multinomial logistic loss (logsumexp), 4 features x 3 classes, W flat (12)",
          point=lambda n: _sce_point().copy(), group=_M),
    Entry("least_squares", _least_squares, "grad",
          "0.5 |Ax - b|^2 with fixed-seed A (30 x n), b",
          point=_ramp(-1.0, 1.0), n=5, group=_M),
    Entry("mlp_loss", _mlp_loss, "grad",
          "squared loss of a 3-4-1 tanh MLP on 20 samples, 21 parameters in one flat vector",
          point=lambda n: _mlp_point().copy(), group=_M),
    # ---------------------------------------------------------------- control flow
    Entry("piecewise", _piecewise, "derivative",
          "exp / 1 + sin / 1 + sin 1 + log by if/elif on x: no single closed form",
          point=_at(0.5), domain="all reals (one scalar at a time)", closed_form=False,
          group=_C),
    Entry("where_piecewise", _where_piecewise, "derivative",
          "the piecewise function written with dnp.where: the closed-form way to branch",
          point=_at(0.5), group=_C),
    Entry("babylonian_sqrt", _babylonian_sqrt, "derivative",
          "sqrt(a) by Heron's iteration until |y^2 - a| <= 1e-12 a; derivative 1/(2 sqrt a)",
          point=_at(2.0), domain="a > 0", closed_form=False, group=_C),
    Entry("newton_cbrt", _newton_cbrt, "derivative",
          "cube root by Newton's method from y = 1; the trip count depends on a",
          point=_at(5.0), domain="a > 0", closed_form=False, group=_C),
    Entry("recursive_exp", _recursive_exp, "derivative",
          "exp(x) = exp(x/2)^2 recursively down to |x| <= 1/2, then Taylor: recursion depth "
          "depends on x", point=_at(1.3),
          closed_form=False, group=_C),
    # ---------------------------------------------------------------- vector-valued
    Entry("tanh_ax", tanh_ax, "jacobian", "tanh(A x) with fixed-seed A (3 x n)",
          point=_ramp(-1.0, 1.0), n=4, group=_V),
    Entry("broyden", _broyden, "jacobian",
          "Broyden's tridiagonal system (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1",
          point=lambda n: np.full(n or 2, -1.0), n=5, group=_V),
    Entry("polar_to_cartesian", _polar_to_cartesian, "jacobian",
          "(r, theta) -> (r cos theta, r sin theta)",
          point=_at([2.0, 0.7]), domain="r >= 0", group=_V),
    Entry("softmax", _softmax, "jacobian", "softmax exp(x - logsumexp(x)): Jacobian diag(s) - s s^T",
          point=_ramp(-1.0, 1.0), n=4, group=_V),
    Entry("bratu", structured.bratu, "jacobian",
          "2-D Bratu residual 4u - neighbours - h^2 e^u on an m x m grid (n = m^2): 5-point pattern",
          point=lambda n: np.full(n or 4, 0.1), n=16, group=_V),
    Entry("banded_least_squares", structured.banded_least_squares, "jacobian",
          "Broyden's banded residual x_i (2 + 5 x_i^2) + 1 - sum_{j=i-5..i+1, j!=i} x_j (1 + x_j)",
          point=lambda n: np.full(n or 2, -1.0), n=10, group=_V),
    # ---------------------------------------------------------------- non-smooth
    Entry("abs_kink", _abs, "derivative", "|x| AT its kink x = 0: diffkit's derivative is 0",
          point=_at(0.0), group=_N),
    Entry("abs_near", _abs, "derivative", "|x| near its kink (x = 1e-8): derivative 1",
          point=_at(1e-8), group=_N),
    Entry("relu_kink", _relu, "derivative", "relu(x) AT its kink x = 0: diffkit's derivative is 0",
          point=_at(0.0), group=_N),
    Entry("relu_near", _relu, "derivative", "relu(x) near its kink (x = 1e-8): derivative 1",
          point=_at(1e-8), group=_N),
    Entry("max_tie", _max_of_two, "derivative",
          "maximum(x, 1 - x) AT the tie x = 1/2: each side gets 1/2, derivative 0",
          point=_at(0.5), group=_N),
    Entry("max_near", _max_of_two, "derivative",
          "maximum(x, 1 - x) just past the tie (x = 0.5 + 1e-8): derivative 1",
          point=_at(0.5 + 1e-8), group=_N),
]

# ---------------------------------------------------------------- iterative solvers: programs
# that iterate (dk.fixed_point, dk.root, dk.odeint), each differentiable several ways
# (diffkit compare F --solver ...; bench/iterative.py)
_I = "iterative solvers"
ENTRIES += [
    Entry(name, p.fn, "grad", description, point=_at(p.point), closed_form=False, group=_I,
          domain=domain)
    for name, p, description, domain in (
        (n, _ITERATIVE[n], d, dom) for n, d, dom in (
            ("fixed_point_sqrt", "x = sqrt(a + x) per entry by dk.fixed_point (a contraction); "
             "gradient of sum x* is 1/sqrt(1 + 4a)", "a > 0"),
            ("newton_cubic", "x^3 + 2x - q = 0 per entry by Newton (dk.root); gradient of "
             "sum x* is 1/(3x*^2 + 2) (Cardano)", "all reals"),
            ("logistic_ode", "y(5) of y' = r y (1 - y/K) by dk.odeint, x = (r, K, y0); closed "
             "form y = K y0 e^rt / (K + y0 (e^rt - 1))", "r, K, y0 > 0"),
            ("lotka_volterra", "sum y(5) of predator-prey by dk.odeint, x = (a, b, c, d)",
             "x > 0"),
            ("robertson", "y3(40) of Robertson's stiff kinetics, x = (k1, k2, k3): explicit "
             "methods are refused (n/a)", "x > 0"),
            ("neural_ode", "|y(1)|^2 of y' = MLP(y), a 2-8-2 tanh MLP with its 42 weights as x",
             "all reals")))]


def names() -> list[str]:
    return [e.name for e in ENTRIES]


def get(name: str) -> Entry:
    """The entry called ``name``; an unknown name is a clear error listing similar ones."""
    for e in ENTRIES:
        if e.name == name:
            return e
    import difflib

    close = difflib.get_close_matches(name, names(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `diffkit list`"
    shown = name if len(name) <= 60 else name[:57] + "..."
    raise DiffkitError(f"unknown catalog function {shown!r}{hint}")
