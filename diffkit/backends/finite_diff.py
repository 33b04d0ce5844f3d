"""Finite-difference derivatives of plain numpy functions.

A difference quotient with step h carries two errors that pull in opposite
directions.  *Truncation* error comes from the Taylor terms the stencil drops
and shrinks like h**p for a method of accuracy order p.  *Round-off* error
comes from cancellation: f(x+h) - f(x) loses about eps*|f|/h to the rounding of
f, so it grows as h shrinks.  Their sum is smallest near h ~ eps**(1/(p+1)),
the automatic step used here (scaled by max(|x|, 1)).  The complex step
Im f(x+ih)/h subtracts nothing, so it has no round-off growth; Richardson
extrapolation cancels the truncation terms of a sequence of central
differences, which allows large steps and thus little round-off.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..core import NotApplicable

__all__ = ["FDResult", "ComplexStepError", "estimate_derivative", "estimate_gradient",
           "estimate_jacobian", "estimate_hessian"]

EPS = np.finfo(float).eps
METHODS = ("forward", "backward", "central", "complex", "richardson")
# weights w_k of f(x+kh) - f(x-kh), k = 1, 2, ..., in central first-derivative stencils
CENTRAL_WEIGHTS = {2: (1 / 2,), 4: (2 / 3, -1 / 12), 6: (3 / 4, -3 / 20, 1 / 60),
                   8: (4 / 5, -1 / 5, 4 / 105, -1 / 280)}
MAX_SHRINKS = 8  # domain safety: shrink a step 10x at a time, at most this often
RICH_LEVELS = 7  # Richardson: central differences at h, h/2, ..., h/64 (14 evaluations)
RICH_START = 0.005  # Richardson: automatic first step, times max(|x|, 1)
_ComplexWarning = getattr(np, "exceptions", np).ComplexWarning
_SAFER = "use method='central' or 'richardson'"


class ComplexStepError(NotApplicable):
    """f is not complex-step safe (not analytic, or uses abs/maximum/comparisons)."""


@dataclass(frozen=True)
class FDResult:
    """A derivative and its bookkeeping: fevals counts one evaluation per
    stencil point even when batched, per entry of x for estimate_derivative() and in
    total for gradient/jacobian/hessian; notes explain anything unusual."""

    value: np.ndarray | float
    error: np.ndarray | float | None
    fevals: int
    step: np.ndarray | float
    method: str
    notes: tuple[str, ...] = ()


def _steps(method: str, order: int, x: np.ndarray, step: ArrayLike | None) -> np.ndarray:
    """The explicit step broadcast to x, or the automatic one: a power of two with exact x+h."""
    if step is not None:
        h = np.broadcast_to(np.asarray(step, dtype=float), x.shape).copy()
        if not np.all(np.isfinite(h) & (h > 0)):
            raise ValueError(f"step must be positive and finite, got {step!r}")
        return h
    scale = np.maximum(np.abs(x), 1.0)
    if method == "complex":  # a power of two, so dividing by h is exact
        return 2.0 ** np.floor(np.log2(1e-20 * scale))
    # truncation ~ h**p against round-off ~ eps / h**d (d-th derivative): h ~ eps**(1/(p+d))
    c = {"forward": EPS**0.5, "backward": EPS**0.5, "central": EPS ** (1 / (order + 1)),
         "hessian": EPS**0.25, "richardson": RICH_START}[method]
    h = 2.0 ** np.floor(np.log2(c * scale))  # a power of two keeps every x + k*h/2**i exact
    return (x + h) - x


def _offsets(method: str, order: int) -> list:
    """Stencil points as multiples of h."""
    if method in ("forward", "backward"):
        return [0.0, 1.0 if method == "forward" else -1.0]
    if method == "complex":
        return [1j]
    if method == "richardson":
        return [s * 2.0**-i for i in range(RICH_LEVELS) for s in (1.0, -1.0)]
    return [s * k for k in range(1, order // 2 + 1) for s in (1.0, -1.0)]


def _attempt(F: Callable, *args) -> np.ndarray | None:
    """F(*args), or None if f raised an arithmetic or domain error."""
    try:
        with np.errstate(all="ignore"):
            return F(*args)
    except (ArithmeticError, ValueError):
        return None


def _finite_per_entry(V: np.ndarray) -> np.ndarray:
    """Whether all of V[:, e, ...] is finite, per entry e (V: [point, entry, *out])."""
    return np.isfinite(V).all(axis=(0, *range(2, V.ndim)))


def _evaluate(F: Callable, x: np.ndarray, h: np.ndarray, offsets: list, shrink: bool):
    """F at x + c*h for each offset c -> (values [offset, entry, *out], h, evals per entry, notes).

    Where a stencil value is NaN/inf (or f raised) while f(x) is finite, f left
    its domain: with shrink, that entry's step is cut 10x until its stencil is
    finite, then 10x once more, since the domain's edge may lie just past it.
    """
    n, m = x.size, len(offsets)
    c = np.asarray(offsets).reshape(m, 1)
    h0, h = h, h.copy()
    nev, fx_ok, margin = np.zeros(n, int), np.ones(n, bool), np.zeros(n, bool)
    todo, V = np.arange(n), None
    for attempt in range(MAX_SHRINKS + 1):
        new = _attempt(F, x[todo] + c * h[todo], None if V is None else todo)
        nev[todo] += m
        bad = np.ones(todo.size, bool) if new is None else ~_finite_per_entry(new)
        if V is None and bad.any():  # is f(x) itself finite there?
            fx = F(x[todo[bad]][None], todo[bad])
            nev[todo[bad]] += 1
            fx_ok[todo[bad]] = _finite_per_entry(fx)
        if new is None:
            out_shape = (fx if V is None else V).shape[2:]
            new = np.full((m, todo.size) + out_shape, np.nan, c.dtype)
        if V is None:
            V = new
        else:
            V[:, todo] = new
        done = todo[~bad & (h[todo] < h0[todo]) & ~margin[todo]]
        margin[done] = True
        todo = np.concatenate([todo[bad & fx_ok[todo]], done])
        if not (shrink and todo.size) or attempt == MAX_SHRINKS:
            break
        h[todo] /= 10
    lost = np.count_nonzero(fx_ok & ~_finite_per_entry(V))
    return V, h, nev, _domain_notes(h0, h, lost, shrink)


def _domain_notes(h0: np.ndarray, h: np.ndarray, lost: int, shrink: bool) -> list[str]:
    """Notes on steps shrunk to stay in f's domain, and a warning for entries still outside."""
    notes, cut = [], np.flatnonzero(h != h0)
    if cut.size:
        where = (f"from {h0[0]:.1e} to {h[0]:.1e}" if h.size == 1 else
                 f"by up to {np.max(h0[cut] / h[cut]):.0e}x at {cut.size} of {h.size} entries")
        notes.append(f"step shrunk {where}: f returned NaN/inf or raised at a stencil point "
                     "(left its domain)")
    if lost:
        why = "even after shrinking the step" if shrink else "with the explicit step (not shrunk)"
        notes.append(f"f is NaN/inf or raised at stencil points of {lost} entries {why} although "
                     "f(x) is finite; the result is NaN there")
        warnings.warn(notes[-1], RuntimeWarning)
    return notes


def _richardson(V: np.ndarray, h: np.ndarray, scale: np.ndarray):
    """Ridders' tableau: the entry whose distance to its two tableau neighbours
    (lower order, previous level) is smallest, plus a round-off allowance."""
    rows = [(V[2 * i] - V[2 * i + 1]) * (2.0 ** (i - 1) / h) for i in range(RICH_LEVELS)]
    # f carries round-off ~ eps (|f| + |x f'|) (rounding of f and of x); level i divides it by h_i
    noise = 2 * EPS * (np.abs(V).max(axis=0) + scale * abs(rows[-1])) / h
    prev = rows[:1]
    value, error = prev[0], np.full(prev[0].shape, np.inf)
    for i in range(1, RICH_LEVELS):
        row = [rows[i]]
        for j in range(1, i + 1):
            row.append(row[j - 1] + (row[j - 1] - prev[j - 1]) / (4.0**j - 1))
            err = np.maximum(abs(row[j] - row[j - 1]), abs(row[j] - prev[j - 1])) + noise * 2.0**i
            better = err < error
            value, error = np.where(better, row[j], value), np.where(better, err, error)
        prev = row
    return value, error + EPS * abs(value)


def _complex_check(F: Callable, x: np.ndarray, value: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Raise ComplexStepError unless central differences (h, 2h) agree with the complex step.

    Safety is a property of f, not of the step: the check uses the complex step at its
    automatic, tiny step (no truncation error), so that a large explicit step's own
    truncation error (h² f‴/6, as large as central's) is not taken for unsafety.
    """
    nev = np.zeros(x.size, int)
    tiny = _steps("complex", 2, x, None)
    if np.any(h != tiny):
        V, _, nev, _ = _evaluate(F, x, tiny, [1j], False)
        value = V[0].imag / tiny.reshape(tiny.shape + (1,) * (V.ndim - 2))
    V, h, more, _ = _evaluate(F, x, _steps("central", 2, x, None), [1.0, -1.0, 2.0, -2.0], True)
    nev = nev + more
    h = h.reshape(h.shape + (1,) * (V.ndim - 2))
    d1, d2 = (V[0] - V[1]) / (2 * h), (V[2] - V[3]) / (4 * h)
    tol = 10 * abs(d1 - d2) + 1e3 * EPS * np.abs(V).max(axis=0) / h  # >> central's error
    bad = np.flatnonzero(abs(value - d1) > tol)
    if bad.size:
        k = bad[0]
        raise ComplexStepError(
            "f is not complex-step safe (not analytic, or uses abs/maximum/comparisons): at "
            f"{bad.size} of {value.size} entries the complex step gives {value.flat[k]:.6g} but "
            f"central differences give {d1.flat[k]:.6g}; {_SAFER}")
    return nev


def _differentiate(F: Callable, x: np.ndarray, method: str, order: int, step: ArrayLike | None):
    """Derivative along each flat entry of x -> (value [entry, *out], error, h, evals, notes)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods: "
                         + ", ".join(map(repr, METHODS)))
    if order not in CENTRAL_WEIGHTS:
        raise ValueError(f"bad order {order!r}; valid orders: "
                         + ", ".join(map(str, CENTRAL_WEIGHTS)))
    x = x.ravel()
    offsets = _offsets(method, order)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", _ComplexWarning)
            h = _steps(method, order, x, step)
            V, h, nev, notes = _evaluate(F, x, h, offsets, shrink=step is None)
    except (TypeError, _ComplexWarning) as exc:
        if method != "complex":
            raise
        raise ComplexStepError(f"f is not complex-step safe ({exc}); {_SAFER}") from exc
    hb = h.reshape(h.shape + (1,) * (V.ndim - 2))
    error = None
    if method == "richardson":
        value, error = _richardson(V, hb, np.maximum(abs(x), 1.0).reshape(hb.shape))
    elif method == "complex":
        value = V[0].imag / hb
        nev = nev + _complex_check(F, x, value, h)
    elif method == "central":
        weights = CENTRAL_WEIGHTS[order]
        value = sum(w * (V[2 * k] - V[2 * k + 1]) for k, w in enumerate(weights)) / hb
    else:
        value = (V[1] - V[0]) / (hb * offsets[1])
    return value, error, h, nev, notes


def estimate_derivative(f: Callable, x: ArrayLike, *, method: str = "central",
               step: ArrayLike | None = None, order: int = 2) -> FDResult:
    """Derivative of an elementwise function R -> R at every entry of x.

    f is vectorized (f(array) has the array's shape) and is called once per
    stencil point on the whole array.  method: "forward" or "backward" (order
    1), "central" (order 2, 4, 6 or 8), "complex" (Im f(x+ih)/h, for analytic,
    complex-safe f) or "richardson" (extrapolated central differences, with an
    error estimate).  step=None derives h from the method's error model; an
    explicit step (for richardson the first, largest one) is used as given.
    fevals is per entry of x.

    >>> r = estimate_derivative(np.sin, 1.0, method="richardson")  # cos(1) = 0.54030230586814
    >>> round(r.value, 12), r.fevals
    (0.540302305868, 14)
    """
    x = np.asarray(x, dtype=float)

    def F(Ys, idx):  # row r of Ys: stencil point r of the entries idx (None: all, shaped like x)
        outs = [np.asarray(f(y.reshape(x.shape) if idx is None else y)) for y in Ys]
        if any(o.size != Ys.shape[1] for o in outs):
            raise TypeError("estimate_derivative() needs an elementwise f; got shape "
                            f"{outs[0].shape} for {Ys.shape[1]} points")
        return np.stack([o.reshape(-1) for o in outs])

    value, error, h, nev, notes = _differentiate(F, x, method, order, step)

    def shaped(a):
        return float(a[0]) if x.ndim == 0 else a.reshape(x.shape)

    return FDResult(shaped(value), None if error is None else shaped(error),
                    int(nev.max(initial=0)), shaped(h), method, tuple(notes))


def _batch_caller(f: Callable, x: np.ndarray, batched: bool | None, notes: list):
    """(X[batch, *x.shape] -> stacked f(X[b]), the probe's evaluations)."""
    def loop(X):
        return np.stack([np.asarray(f(p)) for p in X])

    def together(X):
        return np.asarray(f(X))

    if batched is not None:
        return (together if batched else loop), 0
    ramp = np.linspace(1e-3, 2e-3, x.size).reshape(x.shape)  # probe: two distinct points
    P = np.stack([x, x + ramp * np.maximum(np.abs(x), 1.0)])
    try:
        with np.errstate(all="ignore"):
            a, b = together(P), loop(P)
        batched = a.shape == b.shape and np.allclose(a, b, rtol=1e-10, atol=0, equal_nan=True)
    except Exception:  # f may fail in any way on an axis it does not expect
        batched = False
    notes.append("batched=None: " + ("f accepts a leading batch axis; one call for all points"
                                     if batched else "f is not batch-aware; looping over points"))

    def checked(X):
        """One call for all points, trusted only if it agrees with f at the first point
        (a probe can be fooled, e.g. by f slicing its first axis): else a loop."""
        try:
            with np.errstate(all="ignore"):
                out = together(X)
                first = np.asarray(f(X[0]))
            if out.shape == (len(X),) + first.shape and np.allclose(
                    out[0], first, rtol=1e-10, atol=0, equal_nan=True):
                return out
        except Exception:  # f cannot take this batch after all
            pass
        return loop(X)

    return (checked if batched else loop), 4


def estimate_jacobian(f: Callable, x: ArrayLike, *, method: str = "central",
             step: ArrayLike | None = None, order: int = 2,
             batched: bool | None = None) -> FDResult:
    """Jacobian of f: array -> array, shape f(x).shape + x.shape; fevals is the total.

    method, order and step as in estimate_derivative().  The perturbed points go to f
    in one call with a leading batch axis if batched=True, or if batched=None
    and a probe finds f batch-aware; otherwise f is called point by point.

    >>> r = estimate_jacobian(lambda v: np.stack([v[0] * v[1], v[1]]), [2.0, 3.0])
    >>> np.allclose(r.value, [[3, 2], [0, 1]])
    True
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:  # nothing to perturb: one call gives the shape, the Jacobian is empty
        out = np.shape(f(x))
        h = _steps(method, order, x, step)
        return FDResult(np.zeros(out + x.shape), None if method != "richardson" else
                        np.zeros(out + x.shape), 1, h, method, ("x has no entries",))
    notes, base = [], x.ravel()
    call, probe_evals = _batch_caller(f, x, batched, notes)

    def F(Ys, idx):  # Ys[r, e]: new value of coordinate idx[e] at stencil point r
        idx = np.arange(base.size) if idx is None else idx
        m, k = Ys.shape
        X = np.repeat(base[None].astype(Ys.dtype), m * k, axis=0)
        X[np.arange(m * k), np.tile(idx, m)] = Ys.ravel()
        out = call(X.reshape((m * k,) + x.shape))
        if out.shape[:1] != (m * k,):
            raise TypeError(f"f returned shape {out.shape} for a batch of {m * k} points")
        return out.reshape((m, k) + out.shape[1:])

    value, error, h, nev, more = _differentiate(F, x, method, order, step)

    def shaped(a):
        return np.moveaxis(a, 0, -1).reshape(value.shape[1:] + x.shape)

    return FDResult(shaped(value), None if error is None else shaped(error),
                    int(nev.sum()) + probe_evals, h.reshape(x.shape), method, tuple(notes + more))


def estimate_gradient(f: Callable, x: ArrayLike, *, method: str = "central",
             step: ArrayLike | None = None, order: int = 2,
             batched: bool | None = None) -> FDResult:
    """Gradient of a scalar function of an array x (shape x.shape), as estimate_jacobian().

    >>> r = estimate_gradient(lambda v: v[0] ** 2 + 3 * v[1], [1.0, 5.0])
    >>> np.allclose(r.value, [2.0, 3.0])
    True
    """
    r = estimate_jacobian(f, x, method=method, step=step, order=order, batched=batched)
    if r.value.shape != np.shape(x):
        raise ValueError("estimate_gradient() needs a scalar-valued f, but f(x) has shape "
                         f"{r.value.shape[:r.value.ndim - np.ndim(x)]}; use estimate_jacobian()")
    return r


def estimate_hessian(f: Callable, x: ArrayLike, *, step: ArrayLike | None = None,
            batched: bool | None = None) -> FDResult:
    """Hessian of a scalar function by central second differences, shape x.shape * 2,
    symmetric; step, batched and domain safety as in estimate_jacobian().

    >>> r = estimate_hessian(lambda v: v[0] ** 2 * v[1], [1.0, 2.0])
    >>> np.allclose(r.value, [[4, 2], [2, 0]], atol=1e-6)
    True
    """
    x = np.asarray(x, dtype=float)
    base, n, notes = x.ravel(), x.size, []
    call, fevals = _batch_caller(f, x, batched, notes)
    h0 = h = _steps("hessian", 2, base, step)
    I, J = np.triu_indices(n, 1)
    k, p = np.arange(n), len(I)
    D = np.zeros((1 + 2 * n + 4 * p, n))  # points (x - base) / h: 0, +-e_k, +-e_i +-e_j (i < j)
    D[1 + k, k], D[1 + n + k, k] = 1, -1
    for b, (si, sj) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        rows = 1 + 2 * n + b * p + np.arange(p)
        D[rows, I], D[rows, J] = si, sj
    fx_ok, margin = True, np.zeros(n, bool)
    for attempt in range(MAX_SHRINKS + 1):  # domain safety as in _evaluate, per coordinate
        v = _attempt(call, (base + D * h).reshape((len(D),) + x.shape))
        v = np.full(len(D), np.nan) if v is None else v
        if v.shape != (len(D),):
            raise ValueError(f"estimate_hessian() needs a scalar-valued f; got shape {v.shape[1:]}")
        fevals += len(D)
        bad = ~np.isfinite(v)
        left = bad[1:n + 1] | bad[n + 1:2 * n + 1]  # coordinates whose own stencil left the domain
        odd = bad[1 + 2 * n:].reshape(4, p).any(axis=0) & ~left[I] & ~left[J]
        left[I[odd]] = left[J[odd]] = True  # else blame both coordinates of a failing pair
        if attempt == 0 and bad.any():
            fx_ok, fevals = np.all(np.isfinite(f(x))), fevals + 1
        done = ~left & (h < h0) & ~margin
        margin |= done
        if step is not None or not fx_ok or attempt == MAX_SHRINKS or not (left | done).any():
            break
        h = np.where(left | done, h / 10, h)
    H = np.diag((v[1:n + 1] - 2 * v[0] + v[n + 1:2 * n + 1]) / h**2)
    q = v[1 + 2 * n:].reshape(4, p)
    H[I, J] = H[J, I] = (q[0] - q[1] - q[2] + q[3]) / (4 * h[I] * h[J])
    notes += _domain_notes(h0, h, np.count_nonzero(~np.isfinite(H)) if fx_ok else 0, step is None)
    return FDResult(H.reshape(x.shape * 2), None, fevals, h.reshape(x.shape), "central",
                    tuple(notes))
