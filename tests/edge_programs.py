"""Random cases for the edges of issue 31, each judged against its derivative written out
in numpy (never diffkit against itself).

Three families, drawn by a seeded ``random.Random`` (the soak, ``benchmarks/soak.py``) or by
a test (``tests/test_edge_programs.py``):

* ``byvalue``: ``dk.vmap`` of a function that decides by value, per example: sort, a
  descending sort, the top entries, the entry at argmax / argmin, each through a smooth
  ``g`` and weights; value and per-example gradient (``vmap(grad(f))``) against numpy,
  one example at a time, with the permutation the sort picked.
* ``concat``: ``dnp.concatenate(pieces, axis=None)`` of pieces of several shapes (and
  ranks), each a smooth function of a slice of ``x``; value and gradient.
* ``tape``: ``tape.gradient([y1, y2, ...], x)`` under ``dk.record`` with several targets,
  scalar or with ``output_gradients``: the sum of their gradients (TensorFlow).

>>> import random
>>> case = draw(random.Random(0), "byvalue")
>>> [v["status"] for v in judge(case)]
['agree', 'agree']
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import diffkit as dk
import diffkit.numpy as dnp

FAMILIES = ("byvalue", "concat", "tape")
SMOOTH = {  # name: (diffkit function, numpy function, numpy derivative)
    "sin": (dnp.sin, np.sin, np.cos),
    "exp": (dnp.exp, np.exp, np.exp),
    "tanh": (dnp.tanh, np.tanh, lambda v: 1.0 - np.tanh(v) ** 2),
    "square": (lambda v: v * v, lambda v: v * v, lambda v: 2.0 * v),
}
RTOL = 1e-12


@dataclass
class Case:
    """One drawn case: its family, a description to print, and its data."""

    family: str
    text: str
    x: Any
    data: dict[str, Any] = field(default_factory=dict)
    kind: str = "grad"

    @property
    def source(self) -> str:
        return self.text

    def pretty(self) -> str:
        return f"{self.family}: {self.text}\nx = {np.asarray(self.x).tolist()}"


def _distinct(rng: random.Random, shape: tuple[int, ...]) -> np.ndarray:
    """Values at least 0.05 apart within each example (no ties for sort or argmax)."""
    n = int(np.prod(shape[1:]))
    rows = [np.array(rng.sample(range(-40, 40), n), dtype=float) * 0.05 for _ in range(shape[0])]
    return np.stack(rows).reshape(shape)


def draw(rng: random.Random, family: str) -> Case:
    g = rng.choice(sorted(SMOOTH))
    if family == "byvalue":
        b, n = rng.randint(1, 4), rng.randint(2, 6)
        op = rng.choice(("sort", "descending", "top2", "at_argmax", "at_argmin"))
        w = np.round(np.array([rng.uniform(-2, 2) for _ in range(n)]), 2)
        return Case(family, f"vmap over {b} examples of {op} then {g}, weights {w.tolist()}",
                    _distinct(rng, (b, n)), {"op": op, "g": g, "w": w}, "vmap")
    if family == "concat":
        shapes = [rng.choice(((2,), (3,), (2, 2), (1, 3), (2, 1, 2), ())) for _ in range(rng.randint(2, 4))]
        sizes = [int(np.prod(s)) for s in shapes]
        x = np.round(np.array([rng.uniform(-1.5, 1.5) for _ in range(sum(sizes))]), 3)
        w = np.round(np.array([rng.uniform(-2, 2) for _ in range(sum(sizes))]), 2)
        fs = [rng.choice(sorted(SMOOTH)) for _ in shapes]
        return Case(family, f"concatenate(axis=None) of {fs} on pieces {shapes}, weights "
                    f"{w.tolist()}", x, {"shapes": shapes, "fs": fs, "w": w})
    k, n = rng.randint(2, 4), rng.randint(1, 5)
    fs = [rng.choice(sorted(SMOOTH)) for _ in range(k)]
    scalar = rng.random() < 0.5
    seeds = [np.round(np.array([rng.uniform(-2, 2) for _ in range(n)]), 2) for _ in range(k)]
    x = np.round(np.array([rng.uniform(-1.5, 1.5) for _ in range(n)]), 3)
    return Case(family, f"tape.gradient of {k} targets {fs} "
                + ("(scalar sums)" if scalar else "(vectors with output_gradients)"), x,
                {"fs": fs, "scalar": scalar, "seeds": seeds})


# ----------------------------------------------------------------------------- by value


def _pick(op: str, a: Any, xp: Any) -> Any:
    """The entries ``op`` picks from one example, with ``xp`` = dnp (traced) or np."""
    if op == "sort":
        return xp.sort(a)
    if op == "descending":
        return xp.take_along_axis(a, xp.argsort(a)[::-1], axis=-1)
    if op == "top2":
        return xp.take(a, xp.argsort(a)[-2:])
    return a[(xp.argmax if op == "at_argmax" else xp.argmin)(a)]


def _byvalue_reference(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Value and gradient of each example, by the permutation numpy picks."""
    op, w, (_, g, dg) = case.data["op"], case.data["w"], SMOOTH[case.data["g"]]
    values, grads = [], []
    for a in np.asarray(case.x):
        order = {"sort": np.argsort(a), "descending": np.argsort(a)[::-1],
                 "top2": np.argsort(a)[-2:], "at_argmax": np.array([np.argmax(a)]),
                 "at_argmin": np.array([np.argmin(a)])}[op]
        ww = w[:len(order)]
        values.append(np.sum(ww * g(a[order])))
        grad = np.zeros_like(a)
        np.add.at(grad, order, ww * dg(a[order]))
        grads.append(grad)
    return np.array(values), np.array(grads)


def _byvalue(case: Case) -> tuple[list, list]:
    op, w, (g, _, _) = case.data["op"], case.data["w"], SMOOTH[case.data["g"]]

    k = {"top2": 2, "at_argmax": 1, "at_argmin": 1}.get(op, len(w))  # entries picked

    def f(a: Any) -> Any:
        return dnp.sum((w[:k] if k > 1 else w[0]) * g(_pick(op, a, dnp)))

    value, grad = _byvalue_reference(case)
    return [dk.vmap(f)(case.x), dk.vmap(dk.grad(f))(case.x)], [value, grad]


# ----------------------------------------------------------------------------- concatenate


def _concat(case: Case) -> tuple[list, list]:
    shapes, fs, w = case.data["shapes"], case.data["fs"], case.data["w"]
    bounds = np.cumsum([0] + [int(np.prod(s)) for s in shapes])

    def f(x: Any) -> Any:
        pieces = [dnp.reshape(SMOOTH[name][0](x[lo:hi]), s)
                  for name, s, lo, hi in zip(fs, shapes, bounds[:-1], bounds[1:])]
        return dnp.sum(w * dnp.concatenate(pieces, axis=None))

    x = np.asarray(case.x)
    parts = [SMOOTH[name][1](x[lo:hi]) for name, lo, hi in zip(fs, bounds[:-1], bounds[1:])]
    slopes = np.concatenate([SMOOTH[name][2](x[lo:hi])
                             for name, lo, hi in zip(fs, bounds[:-1], bounds[1:])])
    return [f(x), dk.grad(f)(x)], [np.sum(w * np.concatenate(parts)), w * slopes]


# ----------------------------------------------------------------------------- tape


def _tape(case: Case) -> tuple[list, list]:
    fs, scalar, seeds = case.data["fs"], case.data["scalar"], case.data["seeds"]
    x0 = np.asarray(case.x)
    with dk.record() as tape:
        x = tape.watch(x0)
        targets = [SMOOTH[name][0](x) * c for name, c in zip(fs, seeds)]
        if scalar:
            targets = [dnp.sum(t) for t in targets]
    given = None if scalar else [np.full(x0.shape, 0.5) + k for k in range(len(fs))]
    got = tape.gradient(targets, x, output_gradients=given)
    weights = [np.ones(x0.shape)] * len(fs) if scalar else given
    want = sum(u * c * SMOOTH[name][2](x0) for name, c, u in zip(fs, seeds, weights))
    return [got], [want]


def judge(case: Case) -> list[dict[str, Any]]:
    """One verdict per quantity (value, gradient): ``agree`` within :data:`RTOL` of the
    numpy reference (relative max-norm), else ``disagree`` or ``error`` with the reason."""
    run = {"byvalue": _byvalue, "concat": _concat, "tape": _tape}[case.family]
    names = {"byvalue": ("vmap value", "vmap grad"), "concat": ("value", "grad"),
             "tape": ("tape grad",)}[case.family]
    try:
        got, want = run(case)
    except Exception as exc:  # a crash is a finding, reported as such
        return [{"backend": "diffkit", "kind": names[0], "status": "error", "error": float("nan"),
                 "tol": RTOL, "message": f"{type(exc).__name__}: {exc}"[:200]}]
    out = []
    for name, d, r in zip(names, got, want):
        d, r = np.asarray(d, dtype=float), np.asarray(r, dtype=float)
        scale = max(float(np.max(np.abs(r))), 1e-300) if r.size else 1.0
        err = float(np.max(np.abs(d - r))) / scale if d.shape == r.shape and r.size else (
            0.0 if d.shape == r.shape else float("inf"))
        ok = err <= RTOL
        out.append({"backend": "diffkit", "kind": name, "status": "agree" if ok else "disagree",
                    "error": err, "tol": RTOL,
                    "message": "" if ok else f"shape {d.shape} vs {r.shape}, error {err:.2e}"})
    return out
