"""Random straight-line programs over complex values, judged against JAX (x64) or, without
JAX, against central differences in the real and imaginary directions (never diffkit
against itself).

Two families, drawn by a seeded ``random.Random`` (the soak, ``benchmarks/soak.py``) or by
a test (``tests/test_complex_programs.py``):

* ``complex``: a chain of holomorphic and non-holomorphic steps (exp, sin, tanh, sqrt,
  products, conj, real/imag parts, abs, cumsum, fft, a complex matrix ...) on a complex
  vector, ending in a real loss; its gradient (JAX's convention) by reverse, forward and
  compiled mode, a JVP with a complex tangent and a Hessian-vector product (the JVP of the
  gradient).
* ``complex_tree``: the same chains returning a dict and tuple of complex and real leaves;
  the VJP of a random (complex where the leaf is) cotangent.

The program text uses ``xp`` for the array namespace, so one source runs on diffkit.numpy
and on jax.numpy.

>>> import random
>>> case = draw(random.Random(0), "complex")
>>> sorted({v["status"] for v in judge(case)})
['agree']
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.pytree import flatten
from edge_programs import Case

FAMILIES = ("complex", "complex_tree")
STEPS = ("xp.exp(0.3 * {a})", "xp.sin({a})", "xp.cos(0.5 * {a})", "xp.tanh(0.3 * {a})",
         "xp.sqrt({a} * {a} + 3.0)", "xp.conj({a})", "{a} * {b}", "{a} + {b}", "{a} - 0.5 * {b}",
         "1.0 / ({a} * {a} + 3.0)", "xp.abs({a})", "xp.real({a}) * {b}", "xp.imag({a}) * {b}",
         "{a}[::-1] * {a}", "xp.cumsum({a}) / {n}", "xp.fft.fft({a}) / {n}", "xp.fft.ifft({a})",
         "M @ {a}", "{a} * (0.6 - 0.8j)", "xp.sum({a} * {b}) * {a} / {n}")
RTOL_JAX, RTOL_FD = 1e-9, 1e-6


def draw(rng: random.Random, family: str) -> Case:
    """A program of 3 to 6 steps on a complex vector of 2 to 4 entries."""
    n = rng.randint(2, 4)
    lines = ["v0 = z"]
    for k in range(1, rng.randint(3, 6) + 1):
        a, b = f"v{rng.randrange(k)}", f"v{rng.randrange(k)}"
        lines.append(f"v{k} = " + rng.choice(STEPS).format(a=a, b=b, n=float(n)))
    last = len(lines) - 1
    if family == "complex":
        lines.append(f"return xp.sum(xp.abs(v{last}) ** 2 * W) + xp.real(xp.sum(v{last} * C))")
    else:
        j = rng.randrange(last + 1)
        lines.append(f"return {{'a': v{last}, 'b': (xp.real(v{j}) * W, v{j} * C)}}")
    nr = np.random.default_rng(rng.randrange(2**32))
    data = {"M": (nr.standard_normal((n, n)) + 1j * nr.standard_normal((n, n))) / n,
            "W": nr.uniform(0.5, 1.5, n), "C": nr.standard_normal(n) + 1j * nr.standard_normal(n),
            "dz": nr.standard_normal(n) + 1j * nr.standard_normal(n)}
    z = nr.uniform(-0.8, 0.8, n) + 1j * nr.uniform(-0.8, 0.8, n)
    source = "def f(z):\n" + "".join(f"    {line}\n" for line in lines)
    return Case(family, source, z, data, kind="grad" if family == "complex" else "vjp")


def _function(case: Case, xp: Any) -> Any:
    scope = {"xp": xp, **{k: v for k, v in case.data.items() if k != "dz"}}
    exec(compile(case.text, "<complex program>", "exec"), scope)  # noqa: S102 (our own text)
    return scope["f"]


def _jax() -> Any:
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def _cotangent(y: Any) -> Any:
    """A random cotangent in y's structure, complex where a leaf is."""
    leaves, rebuild = flatten(y)
    nr = np.random.default_rng(7)
    return rebuild([nr.standard_normal(np.shape(v)) + (1j * nr.standard_normal(np.shape(v))
                    if np.iscomplexobj(v) else 0.0) for v in leaves])


def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in flatten(tree)[0]]


def _differences(f: Any, z: np.ndarray, v: np.ndarray, h: float = 1e-4) -> list[np.ndarray]:
    """Fourth-order central difference of f's leaves along v."""
    at = [_leaves(f(z + s * h * v)) for s in (2, 1, -1, -2)]
    return [(8 * (p1 - m1) - (p2 - m2)) / (12 * h) for p2, p1, m1, m2 in zip(*at)]


def quantities(case: Case) -> tuple[list[str], list, list, float]:
    """Names, diffkit's values, the reference's values, and the tolerance."""
    f, z, dz = _function(case, dnp), case.x, case.data["dz"]
    jax = _jax()
    if case.family == "complex":
        names = ["grad reverse", "grad forward", "grad compiled", "jvp", "hvp"]
        got = [dk.grad(f, backend=b)(z) for b in ("reverse", "forward", "compiled")]
        got += [dk.jvp(f, (z,), (dz,))[1], dk.jvp(dk.grad(f), (z,), (dz,))[1]]
        if jax is not None:
            g = _function(case, jax.numpy)
            want = [jax.grad(g)(z)] * 3 + [jax.jvp(g, (z,), (dz,))[1],
                                           jax.jvp(jax.grad(g), (z,), (dz,))[1]]
            return names, got, want, RTOL_JAX
        grad = _fd_grad(f, z)
        return names[:4], got[:4], [grad] * 3 + [_differences(f, z, dz)[0]], RTOL_FD
    y, pull = dk.vjp(f, z)
    u = _cotangent(y)
    got = [pull(u)[0]]
    if jax is not None:
        return ["vjp"], got, [jax.vjp(_function(case, jax.numpy), z)[1](u)[0]], RTOL_JAX
    # without JAX: Re sum(u J v) == Re sum(vjp(u) v), v real and imaginary unit directions
    return ["vjp"], got, [_fd_vjp(f, z, u)], RTOL_FD


def _fd_grad(f: Any, z: np.ndarray) -> np.ndarray:
    units = np.eye(z.size)
    dx = np.array([_differences(f, z, e)[0] for e in units])
    dy = np.array([_differences(f, z, 1j * e)[0] for e in units])
    return dx - 1j * dy


def _fd_vjp(f: Any, z: np.ndarray, u: Any) -> np.ndarray:
    u_leaves = _leaves(u)

    def pair(v: np.ndarray) -> float:
        return sum(float(np.real(np.sum(a * b))) for a, b in zip(u_leaves, _differences(f, z, v)))
    return np.array([pair(e) - 1j * pair(1j * e) for e in np.eye(z.size)])


def judge(case: Case) -> list[dict[str, Any]]:
    """One verdict per quantity: ``agree`` within the tolerance (relative max-norm)."""
    try:
        names, got, want, rtol = quantities(case)
    except Exception as exc:  # a crash is a finding, reported as such
        return [{"backend": "diffkit", "kind": case.kind, "status": "error", "error": float("nan"),
                 "tol": float("nan"), "message": f"{type(exc).__name__}: {exc}"[:200]}]
    out = []
    for name, d, r in zip(names, got, want):
        d, r = np.asarray(d, dtype=complex), np.asarray(r, dtype=complex)
        scale = max(float(np.max(np.abs(r))), 1.0) if r.size else 1.0
        err = float(np.max(np.abs(d - r))) / scale if d.shape == r.shape else float("inf")
        ok = err <= rtol
        out.append({"backend": "diffkit", "kind": name, "status": "agree" if ok else "disagree",
                    "error": err, "tol": rtol,
                    "message": "" if ok else f"shape {d.shape} vs {r.shape}, error {err:.2e}"})
    return out
