"""GradBench's ``kmeans``: the k-means cost and Newton's direction for the centroids.

cost(C) = Σᵢ minⱼ ‖Cⱼ − Pᵢ‖² over points P (n × d) and centroids C (k × d). Functions:
``cost`` and ``dir`` = J / H, the gradient J = ∇cost divided entrywise by the Hessian's
diagonal H (the Hessian is diagonal: each centroid's cost is a sum of squares of its own
coordinates). Input ``{"points": [[...]], "centroids": [[...]]}``; GradBench draws the
points uniform on [0, 1)ᵈ after ``np.random.seed(31337)``, one set per size, and takes the
last k points as centroids (so no cluster is empty); sizes ``k=K,n=N,d=D`` in order of
k·n·d.

The distances are written ‖P‖² + ‖C‖² − 2 P Cᵀ (one matrix product), and ``dir`` is
computed as GradBench's commentary asks: the gradient by the backend, and its JVP along
all-ones by forward mode, which is the Hessian's diagonal since the Hessian is diagonal
(for the numeric backend, which forward mode cannot run through, by its own JVP).

By hand, with Sⱼ the points whose nearest centroid is j: Jⱼ = Σ_{i∈Sⱼ} 2 (Cⱼ − Pᵢ) and
Hⱼ = 2 |Sⱼ| in every coordinate, so dirⱼ = Cⱼ − mean(Sⱼ).

>>> import numpy as np
>>> P = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 10.0]])
>>> C = np.array([[1.0, 1.0], [10.0, 10.0]])
>>> float(cost(C, P)), dir_by_hand(C, P).tolist()
(4.0, [[0.0, 1.0], [0.0, 0.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from ..transforms.functional import grad, jvp
from .common import Eval, InputError, Prepared, Runner, floats, legacy_draws, primal_runner, \
    to_json

SEED = 31337
K = (10, 100, 1000)
N = (1000, 10000)
D = (8, 16)
WORKLOADS = sorted([(k, n, d) for k in K for n in N for d in D], key=lambda v: v[0] * v[1] * v[2])
SIZES = tuple(f"k={k},n={n},d={d}" for k, n, d in WORKLOADS)
CHUNK = 1 << 22  # entries of a distance block in the reference (bounds its memory)


def cost(C: Any, P: Any) -> Any:
    """Σᵢ minⱼ ‖Cⱼ − Pᵢ‖², in :mod:`diffkit.numpy`."""
    dist = (dnp.sum(P * P, axis=1)[:, None] + dnp.sum(C * C, axis=1)[None, :]
            - 2.0 * (P @ dnp.transpose(C)))
    return dnp.sum(dnp.min(dist, axis=1))


def direction(C: Any, P: Any, backend: Backend, outer: str | Backend = "forward") -> Any:
    """J / H: ``backend``'s gradient J, and H its JVP along ones by ``outer`` (forward
    mode over the backend: the Hessian's diagonal, as the Hessian is diagonal)."""
    gradient = grad(cost, backend=backend)
    J, H = jvp(lambda c: gradient(c, P), (C,), (dnp.ones_like(C),), backend=outer)
    return J / H


def direction_runner(backend: Backend) -> Runner:
    """``dir`` as ``backend`` runs it (compiled: the whole of it one program). H is forward
    mode over the backend's gradient; a backend that forward mode cannot run through (the
    numeric one: finite differences take plain arrays) gives H by its own JVP instead,
    here a difference of its gradients."""
    outer: list[str | Backend] = ["forward"]

    def run(static: tuple, C: Any, P: Any) -> Any:
        try:
            return direction(C, P, backend, outer[0])
        except TypeError:
            if outer[0] is backend:
                raise
            outer[0] = backend
            return direction(C, P, backend, backend)

    return backend.stage(run)


# --------------------------------------------------------------------------- by hand


def nearest(C: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the nearest centroid, squared distance to it) per point, from the
    differences themselves (not the expanded form), a block of points at a time."""
    rows = max(1, CHUNK // max(1, C.size))
    which, dist = np.empty(len(P), dtype=int), np.empty(len(P))
    for start in range(0, len(P), rows):
        block = P[start:start + rows]
        d2 = np.sum((block[:, None, :] - C[None, :, :]) ** 2, axis=2)
        which[start:start + rows] = np.argmin(d2, axis=1)
        dist[start:start + rows] = np.min(d2, axis=1)
    return which, dist


def cost_by_hand(C: np.ndarray, P: np.ndarray) -> float:
    return float(np.sum(nearest(C, P)[1]))


def dir_by_hand(C: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Cⱼ − mean of the points nearest to Cⱼ (J = 2|Sⱼ|(Cⱼ − mean), H = 2|Sⱼ|)."""
    which = nearest(C, P)[0]
    counts = np.bincount(which, minlength=len(C)).astype(float)
    sums = np.zeros_like(C)
    np.add.at(sums, which, P)
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty cluster: 0/0, as J/H
        return C - sums / counts[:, None]


# --------------------------------------------------------------------------- GradBench


def inputs(size: str) -> dict[str, Any]:
    def draw(rs: np.random.RandomState, k: int, n: int, d: int) -> dict[str, Any]:
        points = rs.rand(n, d).tolist()
        return {"points": points, "centroids": points[-k:]}

    return legacy_draws(SEED, [(f"k={k},n={n},d={d}", lambda rs, k=k, n=n, d=d: draw(rs, k, n, d))
                               for k, n, d in WORKLOADS], size)


def prepare(input: dict[str, Any]) -> Prepared:
    P, C = floats(input, "points", 2), floats(input, "centroids", 2)
    if P.shape[0] == 0 or C.shape[0] == 0 or P.shape[1] != C.shape[1]:
        raise InputError(f"'points' {P.shape} and 'centroids' {C.shape} must be non-empty "
                         "with the same number of columns")
    return (), (C, P)


def build(function: str, backend: Backend) -> Runner:
    if function == "cost":
        return primal_runner(cost, backend)
    return direction_runner(backend)


def output(function: str, result: Any) -> Any:
    return to_json(result)


def reference(function: str, input: dict[str, Any]) -> Any:
    _, (C, P) = prepare(input)
    return cost_by_hand(C, P) if function == "cost" else dir_by_hand(C, P).tolist()


EVAL = Eval("kmeans", ("cost", "dir"), SIZES, inputs, prepare, build, output, reference,
            "k-means cost and Newton's direction J/H for the centroids")
