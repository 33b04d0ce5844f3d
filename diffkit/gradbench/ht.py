"""GradBench's ``ht``: ADBench's hand tracking, a skinned hand model fitted to points.

The model: 22 bones (a wrist, four bones per finger, a forearm; ``parents`` before their
children), each with a rest transform relative to its parent (``base_relatives``, 4 × 4)
and the inverse of its rest transform in the world (``inverse_base_absolutes``); v
vertices (``base_positions``, homogeneous) skinned by ``weights`` (v × 22); triangles
of vertex indices. The pose θ (26 numbers): a global rotation (angle-axis) θ₀₋₂, a
translation θ₃₋₅, then per finger four angles: the first finger joint bends about x
and z, the next two about x (bones 2–4, 6–8, 10–12, 14–16, 18–20; the others keep their
rest pose). A bone's rotation from its angles (x, z) is R_z R_y R_x (y-angle 0), its
posed relative transform ``base_relative`` · [R 0; 0 1], its world transform A_b the
product down from the root, and a vertex moves to Σ_b w_vb A_b B_b⁻¹ P_v; then (if the
model is mirrored, x negated) the global rotation and translation. Each of c data points
corresponds to a vertex (*simple*: ``us`` empty) or to a point u₀ V_a + u₁ V_b +
(1 − u₀ − u₁) V_c of a triangle (*complicated*), and the residual is the data point
minus that. Functions: ``objective`` (3c residuals, point by point) and ``jacobian``
(3c × 26 w.r.t. θ; complicated: 3c × 28, first the derivatives w.r.t. each point's own
u₀ and u₁, two columns, as the us block is block-diagonal).

Here the Jacobian is ``dk.jacobian`` (the backend's mode) of the residuals as a
function of θ and of a shift (s₀, s₁) added to every point's u: each residual depends on
its own u only, so those two columns are the us block compressed.

Inputs. GradBench reads ADBench's files: a model directory and per size a data file,
``hand{k}_t26_c{c}`` (c = 100 … 100000), by default those of ``complicated_big`` (a
10000-vertex model, 1084 triangles on its first 544 vertices), the sizes here named as
its files are; ``simple_big/hand1_t26_c100`` … are its ``--variant simple``. Those files
are not here: :func:`inputs` generates a model of the same structure and shapes from
``np.random.default_rng(31337)`` (ADBench's bone names and parents; rest rotations
angle-axis normal with deviation 0.3, translations normal with deviation 0.03, each
bone's inverse world transform from those; each vertex near a random bone's origin,
deviation 0.01, weighted on 1–4 bones (with probabilities 0.40, 0.53, 0.04, 0.03, the
model's own proportions), Dirichlet weights; triangles of three distinct vertices among
the first 544), and per size from ``default_rng((31337, k, variant))``: θ normal,
correspondences uniform, us uniform in the triangle, and the data points the model posed
at θ + N(0, 0.1²) at them plus noise of deviation 0.005. A real file is read by
:func:`read` (its model from the ``model`` directory beside it).

By hand (:func:`pose_by_hand`): forward tangents through the bone chain, as ADBench's
manual tool does: for each finger angle, ∂A_b = ∂A_parent · P_b + A_parent · ∂P_b (∂P_b
from ∂R_x = R_z R_y R_x′, ∂R_z = R_z′ R_y R_x, zero off the angle's bone), the vertices'
tangents Σ_b w ∂A_b B_b⁻¹ P rotated globally; ∂R/∂θ₀₋₂ of R = cos n I + sin n [u]× +
(1 − cos n) u uᵀ (n = |θ₀₋₂|, u its direction; R = I and no derivative for n < 10⁻⁴);
translation: the identity; us: ∂r/∂u₀ = V_c − V_a, ∂r/∂u₁ = V_c − V_b.

>>> pose_indices().reshape(-1, 3)[[2, 3, 5]].tolist()  # θ's index per (x, z, y); 26: none
[[6, 7, 26], [8, 26, 26], [26, 26, 26]]
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from .. import jacobian as jacobian_of
from .. import stop_gradient
from .. import numpy as dnp
from ..backends import Backend
from .common import Eval, Indices, InputError, Prepared, Runner, field, floats

SEED = 31337
BONES = ("wrist", "thumb1", "thumb2", "thumb3", "thumb4", "index1", "index2", "index3",
         "index4", "middle1", "middle2", "middle3", "middle4", "ring1", "ring2", "ring3",
         "ring4", "pinky1", "pinky2", "pinky3", "pinky4", "forearm")
PARENTS = (-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19, 0)
THETA, VERTICES, TRIANGLES, CORNERS = 26, 10000, 1084, 544
C = (100, 192, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 100000)
SIMPLE = "simple_big/"
SIZES = tuple(f"hand{k}_t26_c{c}" for k, c in enumerate(C, 1)) + \
    tuple(f"{SIMPLE}hand{k}_t26_c{c}" for k, c in enumerate(C, 1))
MODEL = ("base_relatives", "inverse_base_absolutes", "base_positions", "weights")


@functools.lru_cache(maxsize=1)
def pose_indices() -> np.ndarray:
    """Where each bone's angles (x, z, y: ADBench's order) come from in [θ, 0]: θ's index,
    or 26 (the 0)."""
    index = np.full((len(BONES), 3), THETA)
    k = 6
    for finger in range(5):
        for joint in range(3):
            bone = 2 + 4 * finger + joint
            index[bone, 0], k = k, k + 1
            if joint == 0:
                index[bone, 1], k = k, k + 1
    return index.reshape(-1)


def _matrices(rows: list[list[Any]]) -> Any:
    """A stack of 3 × 3 matrices from their entries (each a vector over the stack)."""
    return dnp.stack([dnp.stack(row, axis=-1) for row in rows], axis=-2)


def euler(angles: Any) -> Any:
    """R_z R_y R_x for each row (x, z, y) of ``angles`` (bones × 3)."""
    c, s = dnp.cos(angles), dnp.sin(angles)
    one, zero = dnp.ones_like(angles[:, 0]), dnp.zeros_like(angles[:, 0])
    rx = _matrices([[one, zero, zero], [zero, c[:, 0], -s[:, 0]], [zero, s[:, 0], c[:, 0]]])
    rz = _matrices([[c[:, 1], -s[:, 1], zero], [s[:, 1], c[:, 1], zero], [zero, zero, one]])
    ry = _matrices([[c[:, 2], zero, s[:, 2]], [zero, one, zero], [-s[:, 2], zero, c[:, 2]]])
    return rz @ ry @ rx


def angle_axis(r: Any) -> Any:
    """The rotation by |r| about r/|r|; the identity when |r| < 10⁻⁴ (ADBench's cut; |r|
    is then taken of 1, so that no derivative of √ at 0 meets the branch not taken)."""
    square = dnp.sum(r * r)
    turning = dnp.sqrt(stop_gradient(square)) >= 1e-4
    n = dnp.sqrt(dnp.where(turning, square, 1.0))
    x, y, z = r[0] / n, r[1] / n, r[2] / n
    c, s = dnp.cos(n), dnp.sin(n)
    k = 1 - c
    rotation = _matrices([[x * x + (1 - x * x) * c, x * y * k - z * s, x * z * k + y * s],
                          [x * y * k + z * s, y * y + (1 - y * y) * c, y * z * k - x * s],
                          [x * z * k - y * s, z * y * k + x * s, z * z + (1 - z * z) * c]])
    return dnp.where(turning, rotation, np.eye(3))


def vertices(theta: Any, relatives: Any, inverses: Any, base: Any, weights: Any,
             parents: tuple[int, ...], mirrored: bool) -> Any:
    """The posed model's vertices (v × 3), in :mod:`diffkit.numpy`."""
    angles = dnp.reshape(dnp.concatenate([theta, dnp.zeros(1)])[pose_indices()], (-1, 3))
    posed = dnp.concatenate([relatives[:, :, :3] @ euler(angles), relatives[:, :, 3:]], axis=2)
    world: list[Any] = []
    for b, parent in enumerate(parents):
        world.append(posed[b] if parent < 0 else world[parent] @ posed[b])
    moves = (dnp.stack(world) @ inverses)[:, :3, :]                      # bones × 3 × 4
    blend = dnp.reshape(weights[:, :, None] * base[:, None, :], (base.shape[0], -1))
    skinned = blend @ dnp.reshape(dnp.transpose(moves, (0, 2, 1)), (-1, 3))
    if mirrored:
        skinned = skinned * np.array([-1.0, 1.0, 1.0])
    return skinned @ dnp.transpose(angle_axis(theta[0:3])) + theta[3:6]


def residuals(z: Any, us: Any, points: Any, relatives: Any, inverses: Any, base: Any,
              weights: Any, where: Indices, parents: tuple[int, ...], mirrored: bool) -> Any:
    """The 3c residuals at z = θ (simple: ``where`` c × 1 vertices) or z = (s, θ)
    (complicated: ``where`` c × 3 triangle corners, u = us + s)."""
    complicated = where.array.shape[1] == 3
    theta = z[2:] if complicated else z
    V = vertices(theta, relatives, inverses, base, weights, parents, mirrored)
    if complicated:
        u = us + z[:2]
        a, b, c = (V[where.array[:, k]] for k in range(3))
        hand = u[:, 0:1] * a + u[:, 1:2] * b + (1.0 - u[:, 0:1] - u[:, 1:2]) * c
    else:
        hand = V[where.array[:, 0]]
    return dnp.reshape(points - hand, (-1,))


def point(theta: Any, us: Any) -> Any:
    """z for θ: θ itself (simple, no us), or (0, 0, θ)."""
    return dnp.concatenate([dnp.zeros(2), theta]) if us.shape[0] else theta


# --------------------------------------------------------------------------- by hand


def _rotation(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, ∂R/∂r_k for k = 0, 1, 2) of :func:`angle_axis`, in plain numpy."""
    n = np.sqrt(np.sum(r * r))
    if n < 1e-4:
        return np.eye(3), np.zeros((3, 3, 3))
    u, c, s = r / n, np.cos(n), np.sin(n)

    def cross(v: np.ndarray) -> np.ndarray:
        return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])

    R = c * np.eye(3) + s * cross(u) + (1 - c) * np.outer(u, u)
    dR = []
    for k in range(3):
        du = (np.eye(3)[k] - u * u[k]) / n
        dR.append(-s * u[k] * np.eye(3) + c * u[k] * cross(u) + s * cross(du)
                  + s * u[k] * np.outer(u, u) + (1 - c) * (np.outer(du, u) + np.outer(u, du)))
    return R, np.stack(dR)


def _euler(x: float, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R_z R_x, ∂/∂x, ∂/∂z) (R_y = I: ADBench's y-angle is 0)."""
    cx, sx, cz, sz = np.cos(x), np.sin(x), np.cos(z), np.sin(z)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    drx = np.array([[0, 0, 0], [0, -sx, -cx], [0, cx, -sx]])
    drz = np.array([[-sz, -cz, 0], [cz, -sz, 0], [0, 0, 0]])
    return rz @ rx, rz @ drx, drz @ rx


def pose_by_hand(theta: np.ndarray, model: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(V (v × 3), ∂V/∂θ (26 × v × 3)) by forward tangents, in plain numpy."""
    index = pose_indices().reshape(-1, 3)
    fingers = np.arange(6, THETA)
    world, tangents = [], []
    for b, parent in enumerate(model["parents"]):
        x, z = (theta[i] if i < THETA else 0.0 for i in index[b, :2])
        rotation, by_x, by_z = _euler(x, z)
        posed = model["base_relatives"][b].copy()
        posed[:, :3] = posed[:, :3] @ rotation
        dposed = np.zeros((len(fingers), 4, 4))  # ∂posed_b / ∂θ_k for the finger angles
        for i, d in ((index[b, 0], by_x), (index[b, 1], by_z)):
            if i < THETA:
                dposed[i - 6, :, :3] = model["base_relatives"][b][:, :3] @ d
        if parent < 0:
            world.append(posed)
            tangents.append(dposed)
        else:
            world.append(world[parent] @ posed)
            tangents.append(tangents[parent] @ posed + world[parent] @ dposed)
    inverses = model["inverse_base_absolutes"]
    moves = (np.stack(world) @ inverses)[:, :3, :]
    dmoves = (np.stack(tangents, axis=1) @ inverses)[:, :, :3, :]        # 20 × bones × 3 × 4
    blend = (model["weights"][:, :, None] * model["base_positions"][:, None, :]).reshape(
        len(model["weights"]), -1)                                       # w_vb P_vj, v × 88
    skin = blend @ moves.transpose(0, 2, 1).reshape(-1, 3)
    dskin = blend @ dmoves.transpose(0, 1, 3, 2).reshape(len(fingers), -1, 3)
    if model["is_mirrored"]:
        skin, dskin = skin * [-1.0, 1.0, 1.0], dskin * [-1.0, 1.0, 1.0]
    R, dR = _rotation(theta[0:3])
    dV = np.empty((THETA, len(skin), 3))
    dV[0:3] = np.einsum("vj,kij->kvi", skin, dR)
    dV[3:6] = np.eye(3)[:, None, :]
    dV[6:] = dskin @ R.T
    return skin @ R.T + theta[3:6], dV


def by_hand(function: str, input: dict[str, Any]) -> np.ndarray:
    """The residuals (3c) or the Jacobian (3c × 26 or 28), in plain numpy."""
    theta, us, points, model, corr = parse(input)
    V, dV = pose_by_hand(theta, model)
    if len(us):
        corners = model["triangles"][corr]
        w = np.stack([us[:, 0], us[:, 1], 1.0 - us[:, 0] - us[:, 1]], axis=1)
        a, b, c = (V[corners[:, k]] for k in range(3))
        hand = w[:, 0:1] * a + w[:, 1:2] * b + w[:, 2:3] * c
        dhand = np.einsum("ct,kctj->cjk", w, dV[:, corners])
    else:
        hand, dhand = V[corr], dV[:, corr].transpose(1, 2, 0)
    if function == "objective":
        return (points - hand).reshape(-1)
    J = -dhand.reshape(-1, THETA)
    return np.concatenate([np.stack([c - a, c - b], axis=-1).reshape(-1, 2), J], axis=1) \
        if len(us) else J


# --------------------------------------------------------------------------- GradBench's inputs


def _rigid(rng: np.random.Generator) -> np.ndarray:
    M = np.eye(4)
    M[:3, :3] = _rotation(rng.normal(0.0, 0.3, 3))[0]
    M[:3, 3] = rng.normal(0.0, 0.03, 3)
    return M


@functools.lru_cache(maxsize=1)
def model() -> dict[str, Any]:
    """The generated model (see the module's docstring), as GradBench's JSON has it."""
    rng = np.random.default_rng(SEED)
    relatives = np.stack([_rigid(rng) for _ in BONES])
    world: list[np.ndarray] = []
    for b, parent in enumerate(PARENTS):
        world.append(relatives[b] if parent < 0 else world[parent] @ relatives[b])
    home = rng.integers(0, len(BONES), VERTICES)
    positions = np.stack([w[:3, 3] for w in world])[home] + rng.normal(0.0, 0.01, (VERTICES, 3))
    weights = np.zeros((VERTICES, len(BONES)))
    counts = rng.choice(4, VERTICES, p=[0.40, 0.53, 0.04, 0.03]) + 1
    for v in range(VERTICES):
        others = rng.permutation(np.delete(np.arange(len(BONES)), home[v]))[:counts[v] - 1]
        weights[v, [home[v], *others]] = rng.dirichlet(np.ones(counts[v]))
    triangles = np.argsort(rng.random((TRIANGLES, CORNERS)), axis=1)[:, :3]
    return {"bone_count": len(BONES), "bone_names": list(BONES), "parents": list(PARENTS),
            "base_relatives": relatives.tolist(),
            "inverse_base_absolutes": np.linalg.inv(np.stack(world)).tolist(),
            "base_positions": np.concatenate([positions, np.ones((VERTICES, 1))], 1).tolist(),
            "weights": weights.tolist(), "triangles": triangles.tolist(), "is_mirrored": False}


def inputs(size: str) -> dict[str, Any]:
    simple = size.startswith(SIMPLE)
    k = SIZES.index(size) % len(C)
    rng = np.random.default_rng((SEED, k + 1, int(simple)))
    theta = rng.normal(size=THETA)
    hand = model()
    c = C[k]
    input = {"theta": theta.tolist(), "us": [],
             "data": {"model": hand, "points": np.zeros((c, 3)).tolist(),
                      "correspondences": rng.integers(0, VERTICES if simple else TRIANGLES,
                                                      c).tolist()}}
    if not simple:
        us = rng.random((c, 2))
        outside = us.sum(axis=1) > 1.0
        us[outside] = 1.0 - us[outside]
        input["us"] = us.tolist()
    posed = input | {"theta": (theta + rng.normal(0.0, 0.1, THETA)).tolist()}
    points = -by_hand("objective", posed).reshape(-1, 3) + rng.normal(0.0, 0.005, (c, 3))
    input["data"] = input["data"] | {"points": points.tolist()}
    return input


def _table(path: Path, sep: str | None) -> list[list[str]]:
    """A text file's non-empty lines split at ``sep``; an :class:`InputError` naming it."""
    try:
        return [line.split(sep) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read it ({e})") from None


def _numbers(path: Path, line: int, words: list[str], count: int, kind: type = float) -> list:
    try:
        values = [kind(w) for w in words]
    except ValueError:
        values = []
    if len(values) < count:
        raise InputError(f"{path}: line {line} must hold {count} numbers, got "
                         f"{':'.join(words)[:60]!r}")
    return values


def read(path: str | Path) -> dict[str, Any]:
    """The input GradBench makes of an ADBench data file (``c 26``, c lines ``vertex-or-
    triangle x y z``, for a complicated one c lines ``u₀ u₁``, then θ) and the model in
    the ``model`` directory beside it (bones.txt, vertices.txt, triangles.txt, fields
    separated by ':'); an :class:`InputError` naming the file and the line otherwise."""
    path = Path(path)
    folder = path.parent / "model"
    bones = _table(folder / "bones.txt", ":")
    rows = [_numbers(folder / "bones.txt", i + 1, b[1:], 33) for i, b in enumerate(bones)]
    verts = _table(folder / "vertices.txt", ":")
    weights = np.zeros((len(verts), len(bones)))
    positions = []
    for i, words in enumerate(verts):
        values = _numbers(folder / "vertices.txt", i + 1, words, 9)
        pairs = np.reshape(values[9:9 + 2 * int(values[8])], (-1, 2))
        if len(pairs) != int(values[8]) or np.any(pairs[:, 0] >= len(bones)):
            raise InputError(f"{folder / 'vertices.txt'}: line {i + 1}: its bone weights do "
                             "not match its count or the bones")
        weights[i, pairs[:, 0].astype(int)] = pairs[:, 1]
        positions.append(values[:3] + [1.0])
    triangles = [_numbers(folder / "triangles.txt", i + 1, t, 3, int)[:3]
                 for i, t in enumerate(_table(folder / "triangles.txt", ":"))]
    lines = _table(path, None)
    c, count = _numbers(path, 1, lines[0] if lines else [], 2, int)[:2]
    complicated = len(lines) == 1 + 2 * c + count
    if len(lines) != 1 + c + count and not complicated:
        raise InputError(f"{path}: {len(lines)} lines, but c = {c} and {count} angles make "
                         f"{1 + c + count} (simple) or {1 + 2 * c + count} (complicated)")
    points = [_numbers(path, i + 2, lines[i + 1], 4) for i in range(c)]
    us = [_numbers(path, i + 2 + c, lines[i + 1 + c], 2)[:2] for i in range(c)] \
        if complicated else []
    theta = [_numbers(path, len(lines) - count + i + 1, lines[len(lines) - count + i], 1)[0]
             for i in range(count)]
    hand = {"bone_count": len(bones), "bone_names": [b[0] for b in bones],
            "parents": [int(r[0]) for r in rows],
            "base_relatives": np.reshape([r[1:17] for r in rows], (-1, 4, 4)).tolist(),
            "inverse_base_absolutes": np.reshape([r[17:33] for r in rows], (-1, 4, 4)).tolist(),
            "base_positions": positions, "weights": weights.tolist(), "triangles": triangles,
            "is_mirrored": False}
    return {"theta": theta, "us": us,
            "data": {"model": hand, "correspondences": [int(p[0]) for p in points],
                     "points": [p[1:4] for p in points]}}


# --------------------------------------------------------------------------- the eval


def _indices(obj: Any, name: str, ndim: int, bound: int) -> np.ndarray:
    arr = floats(obj, name, ndim)
    if arr.size and (np.any(arr != np.round(arr)) or arr.min() < 0 or arr.max() >= bound):
        raise InputError(f"field {name!r} must hold integers from 0 to {bound - 1}")
    return arr.astype(np.intp)


def parse(input: dict[str, Any]) -> tuple:
    """(θ, us (c × 2, or 0 × 2: simple), points, the model's arrays, correspondences),
    checked against each other; an :class:`InputError` saying what does not fit."""
    theta = floats(input, "theta", 1)
    data = field(input, "data")
    hand = field(data, "model")
    parents = [int(p) for p in floats(hand, "parents", 1)]
    if len(parents) != len(BONES) or any(not -1 <= p < b for b, p in enumerate(parents)):
        raise InputError(f"the model must have ADBench's {len(BONES)} bones, each parent "
                         "before its child (-1 for the root)")
    arrays = {k: floats(hand, k, n) for k, n in (("base_relatives", 3),
              ("inverse_base_absolutes", 3), ("base_positions", 2), ("weights", 2))}
    v = len(arrays["base_positions"])
    shapes = {"base_relatives": (len(BONES), 4, 4), "inverse_base_absolutes": (len(BONES), 4, 4),
              "base_positions": (v, 4), "weights": (v, len(BONES))}
    points = floats(data, "points", 2)
    us = np.zeros((0, 2)) if field(input, "us") == [] else floats(input, "us", 2)
    for name, arr, shape in [*((k, arrays[k], shapes[k]) for k in shapes),
                             ("theta", theta, (THETA,)), ("points", points, (len(points), 3)),
                             ("us", us, (len(us) and len(points), 2))]:
        if arr.shape != shape:
            raise InputError(f"field {name!r} has shape {arr.shape}; the model and the "
                             f"points make it {shape}")
    triangles = _indices(hand, "triangles", 2, v)
    corr = _indices(data, "correspondences", 1, len(triangles) if len(us) else v)
    if corr.shape != (len(points),) or triangles.shape[1:] != (3,):
        raise InputError("there must be one correspondence per point, three corners per "
                         "triangle")
    mirrored = field(hand, "is_mirrored")
    if not isinstance(mirrored, bool):
        raise InputError(f"field 'is_mirrored' must be true or false, got {mirrored!r}")
    return theta, us, points, {"parents": parents, "triangles": triangles,
                               "is_mirrored": mirrored, **arrays}, corr


def prepare(input: dict[str, Any]) -> Prepared:
    theta, us, points, hand, corr = parse(input)
    where = hand["triangles"][corr] if len(us) else corr[:, None]
    return ((Indices(where), tuple(hand["parents"]), hand["is_mirrored"]),
            (theta, us, points, *(hand[k] for k in MODEL)))


def build(function: str, backend: Backend) -> Runner:
    if function == "objective":
        return backend.stage(lambda static, theta, us, *rest: residuals(
            point(theta, us), us, *rest, *static))
    jac = jacobian_of(residuals, backend=backend)
    return backend.stage(lambda static, theta, us, *rest: jac(point(theta, us), us, *rest,
                                                              *static))


def output(function: str, result: Any) -> Any:
    return np.asarray(result, dtype=float).tolist()


def reference(function: str, input: dict[str, Any]) -> Any:
    return by_hand(function, input).tolist()


EVAL = Eval("ht", ("objective", "jacobian"), SIZES, inputs, prepare, build, output, reference,
            "ADBench's hand tracking residuals and their Jacobian (simple and complicated)")
