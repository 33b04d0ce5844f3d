"""GradBench's ``ba``: ADBench's bundle adjustment, its residuals and their sparse Jacobian.

A camera is 11 numbers: an angle-axis rotation r (3), its centre C (3), the focal length
f, the principal point x₀ (2) and radial distortion k (2). Observation i sees point
X_j from camera c with weight w_i at feature m_i:

    Y = R(r)(X_j − C),  y = (Y₀, Y₁)/Y₂,  d = y (1 + k₀‖y‖² + k₁‖y‖⁴),
    e_i = w_i (f d + x₀ − m_i)  (2 numbers),      u_i = 1 − w_i²,

R(r) rotating by |r| about r/|r| (Rodrigues: Y = Z cos θ + (n × Z) sin θ + n (n·Z)(1 − cos θ),
or Z + r × Z when r = 0). Functions: ``objective`` (e, u) and ``jacobian``, the
(3p) × (11n + 3m + p) Jacobian of (e, u) w.r.t. (cameras, points, weights): two rows of
15 entries per observation (its camera's 11 columns, its point's 3, its weight), then
one entry −2w_i per weight row, stored row by row (CSR: ``rows`` the row pointers,
``cols``, ``vals``).

GradBench's input is compact (``{"n", "m", "p", "cam", "x", "w", "feat"}``, one camera,
point, weight and feature): the tool makes n cameras, m points, p weights and features
of them and observation i of camera i mod n and point i mod m, and computes every one
(it must not use the repetition). Its outputs are summaries: ``objective``
``{"reproj_error": {"elements": e₀, "repeated": p}, "w_err": {"element": u₀,
"repeated": p}}``, ``jacobian`` the first 30 entries of ``rows``, ``cols`` and ``vals``
and their last (an observation's two rows, and the last weight's).

The Jacobian here is one observation's 2 × 15 Jacobian by ``dk.jacobian`` (the backend's
mode: forward, a VJP per row, or compiled) mapped over the observations by ``dk.vmap``;
the weights' column by ``dk.derivative``.

Inputs. GradBench reads ADBench's files ``ba{k}_n{n}_m{m}_p{p}.txt`` (sizes named by
their stems, ``ba1_n49_m7776_p31843`` … ``ba14_n356_m226730_p1255268`` by default), all
of which hold the same camera, point, weight and feature. Those are not here:
:func:`inputs` keeps the sizes' n, m, p and draws the camera, point, weight and feature
from ``np.random.default_rng(31337)``: r normal, C uniform on [0, 60)³, f on
[300, 500), x₀ normal with deviation 10, k₀ on [0, 0.1), k₁ on [0, 0.01), X on
[0, 10)³, w on [0, 1), the feature on [0, 1000)². A real file is read by
:func:`read` (e.g. ``EVAL.validate("jacobian", read(path), output)``).

By hand (:func:`blocks_by_hand`): with Z = X − C, θ = |r|, n = r/θ, a = n·Z,
∂Y/∂Z = R, ∂Y/∂θ = −Z sin θ + (n × Z) cos θ + n a sin θ,
∂Y/∂n = −sin θ [Z]× + (1 − cos θ)(a I + n Zᵀ), ∂θ/∂r = nᵀ, ∂n/∂r = (I − n nᵀ)/θ
(at r = 0: ∂Y/∂Z = I + [r]×, ∂Y/∂r = −[Z]×); ∂y/∂Y = [[1, 0, −y₀], [0, 1, −y₁]]/Y₂;
with s = ‖y‖², ∂d/∂y = L I + 2(k₀ + 2k₁s) y yᵀ, ∂d/∂k = (y s, y s²). Then
∂e/∂r = w f D ∂Y/∂r, ∂e/∂X = −∂e/∂C = w f D R (D = ∂d/∂y ∂y/∂Y), ∂e/∂f = w d,
∂e/∂x₀ = w I, ∂e/∂k = w f ∂d/∂k, ∂e/∂w = f d + x₀ − m.

>>> size = "ba1_n49_m7776_p31843"
>>> {k: v for k, v in inputs(size).items() if k in "nmp"}
{'n': 49, 'm': 7776, 'p': 31843}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from .. import derivative, jacobian as jacobian_of, vmap
from .common import Eval, Indices, InputError, Prepared, Runner, floats, integer, number

SEED = 31337
NAMES = ("ba1_n49_m7776_p31843", "ba2_n21_m11315_p36455", "ba3_n161_m48126_p182072",
         "ba4_n372_m47423_p204472", "ba5_n257_m65132_p225911", "ba6_n539_m65220_p277273",
         "ba7_n93_m61203_p287451", "ba8_n88_m64298_p383937", "ba9_n810_m88814_p393775",
         "ba10_n1197_m126327_p563734", "ba11_n1723_m156502_p678718",
         "ba12_n253_m163691_p899155", "ba13_n245_m198739_p1091386",
         "ba14_n356_m226730_p1255268")
SIZES = NAMES  # GradBench's default --max 14 (its files go on to ba20)
SHOWN = 30     # GradBench keeps the first 30 entries of rows, cols, vals, and the last


def rotate(r: Any, z: Any) -> Any:
    """R(r) z by Rodrigues' formula, z + r × z at r = 0 (a branch by ``dnp.where``)."""
    square = dnp.sum(r * r)
    turning = square != 0.0
    theta = dnp.sqrt(dnp.where(turning, square, 1.0))
    n = r / theta
    c, s = dnp.cos(theta), dnp.sin(theta)
    turned = z * c + dnp.cross(n, z) * s + n * (dnp.sum(n * z) * (1.0 - c))
    return dnp.where(turning, turned, z + dnp.cross(r, z))


def residual(params: Any, feature: Any) -> Any:
    """e for one observation, ``params`` its camera, point and weight (15 numbers)."""
    Y = rotate(params[0:3], params[11:14] - params[3:6])
    y = Y[0:2] / Y[2]
    s = dnp.sum(y * y)
    d = y * (1.0 + params[9] * s + params[10] * s * s)
    return params[14] * (d * params[6] + params[7:9] - feature)


def weight_error(w: Any) -> Any:
    return 1.0 - w * w


def gathered(cams: Any, X: Any, w: Any, obs: Indices) -> Any:
    """Each observation's 15 parameters (p × 15)."""
    return dnp.concatenate([cams[obs.array[:, 0]], X[obs.array[:, 1]], w[:, None]], axis=1)


def objective(cams: Any, X: Any, w: Any, feats: Any, obs: Indices) -> tuple:
    """(e (p × 2), u (p)), in :mod:`diffkit.numpy`."""
    return vmap(residual)(gathered(cams, X, w, obs), feats), weight_error(w)


def jacobian(cams: Any, X: Any, w: Any, feats: Any, obs: Indices, backend: Backend) -> tuple:
    """(the observations' 2 × 15 blocks (p × 2 × 15), the weights' derivatives (p))."""
    blocks = vmap(jacobian_of(residual, backend=backend))(gathered(cams, X, w, obs), feats)
    return blocks, derivative(weight_error, backend=backend)(w)


# --------------------------------------------------------------------------- by hand


def _cross_matrix(v: np.ndarray) -> np.ndarray:
    """[v]× for each row of v (… × 3 → … × 3 × 3): [v]× z = v × z."""
    o = np.zeros(v.shape[:-1])
    return np.stack([np.stack([o, -v[..., 2], v[..., 1]], -1),
                     np.stack([v[..., 2], o, -v[..., 0]], -1),
                     np.stack([-v[..., 1], v[..., 0], o], -1)], -2)


def _rotation_by_hand(r: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, ...]:
    """(Y, ∂Y/∂r, ∂Y/∂Z) per observation."""
    theta = np.sqrt(np.sum(r * r, axis=1))
    turning = theta != 0.0
    t = np.where(turning, theta, 1.0)[:, None, None]
    n = r / t[:, :, 0]
    c, s = np.cos(t), np.sin(t)
    a = np.sum(n * z, axis=1)[:, None, None]
    eye, nz, zx = np.eye(3), np.cross(n, z), _cross_matrix(z)
    nn = n[:, :, None] * n[:, None, :]
    Y = z * c[:, 0] + nz * s[:, 0] + n * (a[:, 0] * (1.0 - c[:, 0]))
    R = c * eye + s * _cross_matrix(n) + (1.0 - c) * nn
    dY_dtheta = -z * s[:, 0] + nz * c[:, 0] + n * (a[:, 0] * s[:, 0])
    dY_dn = -s * zx + (1.0 - c) * (a * eye + n[:, :, None] * z[:, None, :])
    dY_dr = dY_dtheta[:, :, None] * n[:, None, :] + dY_dn @ ((eye - nn) / t)
    still = ~turning
    Y[still] = z[still] + np.cross(r[still], z[still])
    R[still] = eye + _cross_matrix(r[still])
    dY_dr[still] = -zx[still]
    return Y, dY_dr, R


def blocks_by_hand(params: np.ndarray, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e (p × 2), its 2 × 15 blocks (p × 2 × 15)) for each observation's 15 parameters."""
    r, C, f, x0, k = params[:, 0:3], params[:, 3:6], params[:, 6], params[:, 7:9], params[:, 9:11]
    w = params[:, 14]
    Y, dY_dr, R = _rotation_by_hand(r, params[:, 11:14] - C)
    y = Y[:, 0:2] / Y[:, 2:3]
    depth = Y[:, 2, None, None]
    dy_dY = np.concatenate([np.eye(2)[None] / depth, -y[:, :, None] / depth], axis=2)
    s = np.sum(y * y, axis=1)
    L = 1.0 + k[:, 0] * s + k[:, 1] * s * s
    d = y * L[:, None]
    dd_dy = L[:, None, None] * np.eye(2) + 2.0 * (k[:, 0] + 2.0 * k[:, 1] * s)[:, None, None] \
        * y[:, :, None] * y[:, None, :]
    D = (w * f)[:, None, None] * (dd_dy @ dy_dY)
    e = w[:, None] * (d * f[:, None] + x0 - feats)
    J = np.empty((len(params), 2, 15))
    J[:, :, 0:3] = D @ dY_dr
    J[:, :, 11:14] = D @ R
    J[:, :, 3:6] = -J[:, :, 11:14]
    J[:, :, 6] = w[:, None] * d
    J[:, :, 7:9] = w[:, None, None] * np.eye(2)
    J[:, :, 9] = (w * f * s)[:, None] * y
    J[:, :, 10] = (w * f * s * s)[:, None] * y
    J[:, :, 14] = d * f[:, None] + x0 - feats
    return e, J


# --------------------------------------------------------------------------- GradBench


def sizes_of(name: str) -> tuple[int, int, int]:
    """(n, m, p) of a size named as ADBench's files are."""
    _, n, m, p = name.split("_")
    return int(n[1:]), int(m[1:]), int(p[1:])


def inputs(size: str) -> dict[str, Any]:
    n, m, p = sizes_of(size)
    rng = np.random.default_rng(SEED)
    cam = np.concatenate([rng.normal(size=3), rng.uniform(0, 60, 3), rng.uniform(300, 500, 1),
                          10.0 * rng.normal(size=2), rng.uniform(0, 0.1, 1),
                          rng.uniform(0, 0.01, 1)])
    return {"n": n, "m": m, "p": p, "cam": cam.tolist(), "x": rng.uniform(0, 10, 3).tolist(),
            "w": float(rng.uniform()), "feat": rng.uniform(0, 1000, 2).tolist()}


def read(path: str | Path) -> dict[str, Any]:
    """The input GradBench makes of an ADBench file (``n m p``, then the camera, the point,
    the weight and the feature, a line each); an :class:`InputError` naming the file and
    what is wrong with it otherwise."""
    counts = (3, 11, 3, 1, 2)
    what = ("n m p", "the camera (11 numbers)", "the point (3 numbers)", "the weight",
            "the feature (2 numbers)")
    try:
        lines = Path(path).read_text().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read it ({e})") from None
    rows = [line.split() for line in lines if line.strip()]
    values = []
    for k, (count, meaning) in enumerate(zip(counts, what)):
        row = rows[k] if k < len(rows) else []
        try:
            numbers = [(int if k == 0 else float)(v) for v in row]
        except ValueError:
            numbers = []
        if len(numbers) != count:
            raise InputError(f"{path}: line {k + 1} must be {meaning}, got {' '.join(row)!r}")
        values.append(numbers)
    (n, m, p), cam, x, (w,), feat = values
    return {"n": n, "m": m, "p": p, "cam": cam, "x": x, "w": w, "feat": feat}


def prepare(input: dict[str, Any]) -> Prepared:
    n, m, p = (integer(input, k, 1) for k in "nmp")
    one = {}
    for name, count in (("cam", 11), ("x", 3), ("feat", 2)):
        one[name] = floats(input, name, 1)
        if one[name].shape != (count,):
            raise InputError(f"field {name!r} must hold {count} numbers, got {one[name].size}")
    w = number(input, "w")
    obs = Indices(np.stack([np.arange(p) % n, np.arange(p) % m], axis=1))
    return (obs,), (np.tile(one["cam"], (n, 1)), np.tile(one["x"], (m, 1)), np.full(p, w),
                    np.tile(one["feat"], (p, 1)))


def build(function: str, backend: Backend) -> Runner:
    """The function as ``backend`` runs it; its result carries what :func:`output` needs
    besides (the observations, n, m)."""
    if function == "objective":
        staged = backend.stage(lambda static, *arrays: objective(*arrays, *static))
    else:
        staged = backend.stage(lambda static, *arrays: jacobian(*arrays, *static, backend))
    return lambda static, cams, X, w, feats: (staged(static, cams, X, w, feats), static[0],
                                              len(cams), len(X))


def summary(blocks: np.ndarray, w_d: np.ndarray, obs: np.ndarray, n: int, m: int
            ) -> dict[str, Any]:
    """GradBench's summary of the Jacobian in CSR form: the first 30 entries of rows, cols
    and vals and the last of each (entry by entry: the whole has 31p entries)."""
    p = len(w_d)

    def entry(e: int) -> tuple[int, float]:
        if e >= 30 * p:  # the weights' rows: one entry each
            return 11 * n + 3 * m + e - 30 * p, float(w_d[e - 30 * p])
        o, j = e // 30, e % 15
        column = (11 * obs[o, 0] + j if j < 11 else
                  11 * n + 3 * obs[o, 1] + j - 11 if j < 14 else 11 * n + 3 * m + o)
        return int(column), float(blocks[o, e % 30 // 15, j])

    rows = [15 * k if k <= 2 * p else 30 * p + k - 2 * p
            for k in [*range(min(SHOWN, 3 * p + 1)), 3 * p]]
    entries = [entry(e) for e in [*range(min(SHOWN, 31 * p)), 31 * p - 1]]
    return {"rows": rows, "cols": [c for c, _ in entries], "vals": [v for _, v in entries]}


def output(function: str, result: Any) -> Any:
    (first, second), obs, n, m = result
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if function == "objective":
        return {"reproj_error": {"elements": first[0].tolist(), "repeated": len(second)},
                "w_err": {"element": float(second[0]), "repeated": len(second)}}
    return summary(first, second, obs.array, n, m)


def reference(function: str, input: dict[str, Any]) -> Any:
    (obs,), (cams, X, w, feats) = prepare(input)
    params = np.concatenate([cams[obs.array[:, 0]], X[obs.array[:, 1]], w[:, None]], axis=1)
    e, blocks = blocks_by_hand(params, feats)
    result = (e, 1.0 - w * w) if function == "objective" else (blocks, -2.0 * w)
    return output(function, (result, obs, len(cams), len(X)))


EVAL = Eval("ba", ("objective", "jacobian"), SIZES, inputs, prepare, build, output, reference,
            "ADBench's bundle adjustment residuals and their sparse Jacobian")
