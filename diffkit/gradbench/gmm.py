"""GradBench's ``gmm``: the log posterior of a Gaussian mixture with a Wishart prior.

Parameters: α (K) for the weights φ = softmax(α), means μ (K × D), and per component a
lower-triangular Q_k with diagonal exp(q_k) and strictly lower part l_k filled column by
column, the precision being Σ_k⁻¹ = Q_kᵀ Q_k. Data x (N × D), prior m ≥ 0 and γ > 0,
Wishart degrees of freedom ν = D + m + 1 and scale V = I/γ². With

    β_ik = α_k − ½ ‖Q_k (x_i − μ_k)‖² + Σ_j q_kj,

the objective is

    F = Σ_i lse(β_i) − N (D/2 log 2π + lse(α))
        + K (νD log(γ/√2) − log Γ_D(ν/2)) − γ²/2 Σ_k ‖Q_k‖_F² + m Σ_k Σ_j q_kj,

where lse is the LogSumExp of :mod:`.lse`. Functions: ``objective`` (F) and ``jacobian``
(∇F as ``{"alpha", "mu", "q", "l"}``). GradBench draws every input from
``np.random.default_rng(31337)`` per size (x and q, l, α normal; μ uniform), N = 1000,
m = 0, γ = 1, sizes ``D_K_N`` in order of D·K.

By hand. Let r_ik = softmax_k(β_i) (the responsibilities), R_k = Σ_i r_ik,
δ_ik = x_i − μ_k, z_ik = Q_k δ_ik, and G_k = −Σ_i r_ik z_ik δ_ikᵀ (D × D: ∂/∂Q_k of
Σ_i lse(β_i), of which the lower triangle counts). Then

    ∂F/∂α_k  = R_k − N softmax(α)_k
    ∂F/∂μ_k  = Σ_i r_ik Q_kᵀ z_ik
    ∂F/∂q_kj = exp(q_kj) G_k[j, j] + R_k − γ² exp(2 q_kj) + m
    ∂F/∂l_kp = G_k[i_p, j_p] − γ² l_kp,    (i_p, j_p) the p-th strictly lower entry by columns.

>>> import numpy as np
>>> lower_indices(3)                    # where l fills Q, column by column
(array([1, 2, 2]), array([0, 0, 1]))
>>> to_q(np.zeros((1, 3)), np.array([[1.0, 2.0, 3.0]]))[0].tolist()
[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [2.0, 3.0, 1.0]]
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.special

from .. import numpy as dnp
from ..backends import Backend
from .common import Eval, InputError, Prepared, Runner, floats, gradient_runner, \
    integer, number, primal_runner

SEED = 31337
D = (2, 10, 20, 32, 64)
K = (5, 10, 25, 50, 100)
N = 1000
M, GAMMA = 0, 1.0
WORKLOADS = sorted([(d, k) for d in D for k in K], key=lambda v: v[0] * v[1])
SIZES = tuple(f"{d}_{k}_{N}" for d, k in WORKLOADS)
PARAMS = ("alpha", "mu", "q", "l")


@functools.lru_cache(maxsize=None)
def lower_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the strictly lower triangle of a d × d matrix, column by column
    (the order in which ``l`` fills Q)."""
    cols, rows = np.triu_indices(d, 1)  # (row < col) in row order = (col > row) by columns
    return rows, cols


@functools.lru_cache(maxsize=None)
def _gather_index(d: int) -> np.ndarray:
    """For Q flattened row-major: where each entry comes from in [exp(q), l, 0]."""
    index = np.full((d, d), d + d * (d - 1) // 2)  # above the diagonal: the trailing 0
    index[np.arange(d), np.arange(d)] = np.arange(d)
    rows, cols = lower_indices(d)
    index[rows, cols] = d + np.arange(rows.size)
    return index.reshape(-1)


def to_q(q: Any, l: Any) -> Any:
    """The K lower-triangular factors Q_k (K × D × D), by one gather from [exp(q), l, 0]."""
    k, d = q.shape
    parts = dnp.concatenate([dnp.exp(q), l, dnp.zeros((k, 1))], axis=1)
    return dnp.reshape(parts[:, _gather_index(d)], (k, d, d))


def logsumexp(v: Any, axis: int | None = None) -> Any:
    """:func:`.lse.lse` along an axis: the max shift, then a sum."""
    a = dnp.max(v, axis=axis, keepdims=True)
    out = a + dnp.log(dnp.sum(dnp.exp(v - a), axis=axis, keepdims=True))
    return dnp.sum(out, axis=axis) if axis is not None else dnp.reshape(out, ())


def constant(d: int, k: int, n: int, m: int, gamma: float) -> float:
    """The parameter-free terms: −N D/2 log 2π + K (νD log(γ/√2) − log Γ_D(ν/2))."""
    nu = d + m + 1
    return (-n * d / 2 * np.log(2 * np.pi)
            + k * (nu * d * np.log(gamma / np.sqrt(2)) - scipy.special.multigammaln(nu / 2, d)))


def objective(params: tuple, x: Any, m: int, gamma: float) -> Any:
    """F(α, μ, q, l) in :mod:`diffkit.numpy`, ``params = (alpha, mu, q, l)``."""
    alpha, mu, q, l = params
    (k, d), n = mu.shape, x.shape[0]
    Q = to_q(q, l)
    delta = x[:, None, :] - mu[None, :, :]                      # N × K × D
    z = dnp.einsum("kij,nkj->nki", Q, delta)
    beta = alpha - 0.5 * dnp.sum(z * z, axis=2) + dnp.sum(q, axis=1)
    frobenius = dnp.sum(dnp.exp(2.0 * q)) + dnp.sum(l * l)
    return (dnp.sum(logsumexp(beta, axis=1)) - n * logsumexp(alpha)
            + constant(d, k, n, m, gamma) - 0.5 * gamma ** 2 * frobenius + m * dnp.sum(q))


# --------------------------------------------------------------------------- by hand


def _q_numpy(q: np.ndarray, l: np.ndarray) -> np.ndarray:
    k, d = q.shape
    Q = np.zeros((k, d, d))
    Q[:, np.arange(d), np.arange(d)] = np.exp(q)
    rows, cols = lower_indices(d)
    Q[:, rows, cols] = l
    return Q


def _softmax(v: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """(softmax, logsumexp) along ``axis``."""
    a = np.max(v, axis=axis, keepdims=True)
    e = np.exp(v - a)
    s = np.sum(e, axis=axis, keepdims=True)
    return e / s, np.squeeze(a + np.log(s), axis)


def _pieces(params: tuple, x: np.ndarray) -> tuple:
    alpha, mu, q, l = params
    Q = _q_numpy(q, l)
    delta = x[:, None, :] - mu[None, :, :]
    z = np.einsum("kij,nkj->nki", Q, delta)
    beta = alpha - 0.5 * np.sum(z * z, axis=2) + np.sum(q, axis=1)
    return Q, delta, z, beta


def objective_by_hand(params: tuple, x: np.ndarray, m: int, gamma: float) -> float:
    alpha, mu, q, l = params
    (k, d), n = mu.shape, x.shape[0]
    _, _, _, beta = _pieces(params, x)
    frobenius = np.sum(np.exp(2 * q)) + np.sum(l * l)
    return float(np.sum(_softmax(beta, 1)[1]) - n * _softmax(alpha)[1]
                 + constant(d, k, n, m, gamma) - 0.5 * gamma ** 2 * frobenius + m * np.sum(q))


def jacobian_by_hand(params: tuple, x: np.ndarray, m: int, gamma: float) -> tuple:
    """(∂F/∂α, ∂F/∂μ, ∂F/∂q, ∂F/∂l) by the formulas of the module's docstring."""
    alpha, mu, q, l = params
    n = x.shape[0]
    Q, delta, z, beta = _pieces(params, x)
    r = _softmax(beta, 1)[0]                                    # N × K
    R = np.sum(r, axis=0)
    d_alpha = R - n * _softmax(alpha)[0]
    d_mu = np.einsum("nk,kji,nkj->ki", r, Q, z)                 # Σ_i r_ik Q_kᵀ z_ik
    G = -np.einsum("nk,nki,nkj->kij", r, z, delta)
    d = q.shape[1]
    d_q = np.exp(q) * G[:, np.arange(d), np.arange(d)] + R[:, None] - gamma ** 2 * np.exp(2 * q) + m
    rows, cols = lower_indices(d)
    d_l = G[:, rows, cols] - gamma ** 2 * l
    return d_alpha, d_mu, d_q, d_l


# --------------------------------------------------------------------------- GradBench


def inputs(size: str) -> dict[str, Any]:
    d, k, n = (int(v) for v in size.split("_"))
    rng = np.random.default_rng(seed=SEED)
    return {"d": d, "k": k, "n": n,
            "x": [rng.normal(size=d).tolist() for _ in range(n)],
            "m": M, "gamma": GAMMA,
            "alpha": rng.normal(size=k).tolist(),
            "mu": [rng.uniform(size=d).tolist() for _ in range(k)],
            "q": [rng.normal(size=d).tolist() for _ in range(k)],
            "l": [rng.normal(size=d * (d - 1) // 2).tolist() for _ in range(k)]}


def prepare(input: dict[str, Any]) -> Prepared:
    d, k, n = integer(input, "d", 1), integer(input, "k", 1), integer(input, "n", 1)
    m, gamma = integer(input, "m", 0), number(input, "gamma")
    shapes = {"x": (n, d), "alpha": (k,), "mu": (k, d), "q": (k, d), "l": (k, d * (d - 1) // 2)}
    arrays = {}
    for name, shape in shapes.items():
        arrays[name] = floats(input, name, len(shape))
        if arrays[name].shape != shape:
            raise InputError(f"field {name!r} has shape {arrays[name].shape}; d={d}, k={k}, "
                             f"n={n} make it {shape}")
    if gamma <= 0:
        raise InputError(f"field 'gamma' must be positive, got {gamma}")
    return (m, gamma), (tuple(arrays[p] for p in PARAMS), arrays["x"])


def build(function: str, backend: Backend) -> Runner:
    if function == "objective":
        return primal_runner(objective, backend)
    return gradient_runner(objective, backend)


def output(function: str, result: Any) -> Any:
    if function == "objective":
        return float(result)
    return {name: np.asarray(g, dtype=float).tolist() for name, g in zip(PARAMS, result)}


def reference(function: str, input: dict[str, Any]) -> Any:
    (m, gamma), (params, x) = prepare(input)
    if function == "objective":
        return objective_by_hand(params, x, m, gamma)
    return output("jacobian", jacobian_by_hand(params, x, m, gamma))


EVAL = Eval("gmm", ("objective", "jacobian"), SIZES, inputs, prepare, build, output, reference,
            "Gaussian mixture log posterior with a Wishart prior, and its gradient")
