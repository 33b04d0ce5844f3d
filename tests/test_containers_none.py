"""``None`` in a container is an empty subtree, as in JAX (issue 41): it has no leaves, ``f``
receives it as ``None``, and it comes back as ``None`` in gradients, Jacobians, Hessians,
tangents, cotangents, ``has_aux`` values and ``vmap`` results, on every backend. The
numbers are checked against closed forms; JAX's own answers (where installed) fix the
structures.
"""
from __future__ import annotations

import collections
import warnings
from typing import Any

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.pytree import flatten, structure, tree_map

BACKENDS = ["reverse", "forward", "compiled", "numeric", "symbolic"]
W = np.array([1.0, 2.0])
PARAMS = {"w": W, "b": None, "t": (3.0, None), "empty": [None, {"z": None}]}


def loss(p: Any) -> Any:
    assert p["b"] is None and p["t"][1] is None and p["empty"] == [None, {"z": None}]
    return dnp.sum(p["w"] ** 2) * p["t"][0]


# d loss = (2 w t, |w|^2): 2 * [1, 2] * 3 and 1 + 4
GRAD = {"w": np.array([6.0, 12.0]), "b": None, "t": (5.0, None), "empty": [None, {"z": None}]}


def same(got: Any, want: Any, rtol: float = 1e-12) -> None:
    """Equal structures (None where want has None) and leaves within ``rtol``."""
    if want is None:
        assert got is None, got
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (got, want)
        for k in want:
            same(got[k], want[k], rtol)
        return
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w, rtol)
        return
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=rtol, atol=rtol)


def tol(backend: str) -> float:
    return 1e-6 if backend == "numeric" else 1e-12


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (compiled without numba says so)
        yield


def test_flatten_keeps_none_as_a_node_without_leaves() -> None:
    leaves, rebuild = flatten({"w": 1.0, "b": None, "t": (None, 2.0)})
    assert leaves == [1.0, 2.0]
    assert rebuild([10.0, 20.0]) == {"w": 10.0, "b": None, "t": (None, 20.0)}
    assert flatten(None)[0] == [] and flatten(None)[1]([]) is None
    assert tree_map(lambda v: v + 1, [None, 1.0]) == [None, 2.0]
    # cache keys tell a leaf from None apart
    assert structure({"a": 1.0, "b": None}) != structure({"a": None, "b": 1.0})


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_the_issue_example(backend: str) -> None:
    got = dk.grad(lambda d: d["w"] ** 2, backend=backend)({"w": 3.0, "b": None})
    assert set(got) == {"w", "b"} and got["b"] is None
    assert abs(got["w"] - 6.0) <= tol(backend) * 6.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_and_value_and_grad_with_nested_nones(backend: str) -> None:
    same(dk.grad(loss, backend=backend)(PARAMS), GRAD, tol(backend))
    value, g = dk.value_and_grad(loss, backend=backend)(PARAMS)
    assert abs(value - 15.0) <= 1e-12 * 15
    same(g, GRAD, tol(backend))


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "symbolic"])  # (no has_aux)
def test_has_aux_with_none_in_the_aux_and_the_argument(backend: str) -> None:
    def f(p: Any) -> Any:
        return loss(p), {"none": None, "w": p["w"], "pair": (None, 1.0)}

    (value, aux), g = dk.value_and_grad(f, backend=backend, has_aux=True)(PARAMS)
    assert abs(value - 15.0) <= 1e-12 * 15
    same(aux, {"none": None, "w": W, "pair": (None, 1.0)})
    same(g, GRAD, tol(backend))
    g2, aux2 = dk.grad(f, backend=backend, has_aux=True)(PARAMS)
    same(g2, GRAD, tol(backend))
    assert aux2["none"] is None and aux2["pair"][0] is None


@pytest.mark.parametrize("backend", BACKENDS + [None])
def test_argnums_with_a_none_argument(backend: str | None) -> None:
    gx, gn = dk.grad(lambda x, n: x ** 3, argnums=(0, 1), backend=backend)(2.0, None)
    assert abs(gx - 12.0) <= tol(backend or "reverse") * 12 and gn is None
    # a None argument not differentiated: passed through as it is
    assert abs(dk.grad(lambda x, n: x ** 3 if n is None else 0.0, backend=backend)(2.0, None)
               - 12.0) <= tol(backend or "reverse") * 12
    # nothing but None: an empty gradient, as JAX (f is still called)
    assert dk.grad(lambda n: 1.5, backend=backend)(None) is None


@pytest.mark.parametrize("backend", BACKENDS + [None])
def test_jacobian_with_none_in_the_input_and_the_output(backend: str | None) -> None:
    def f(p: Any) -> Any:
        return {"y": p["w"] * p["t"][0], "none": None, "pair": (None, p["t"][0] ** 2)}

    jac = dk.jacobian(f, backend=backend)(PARAMS)
    t = tol(backend or "reverse")
    same(jac["y"], {"w": 3.0 * np.eye(2), "b": None, "t": (W, None), "empty": [None, {"z": None}]}, t)
    assert jac["none"] is None and jac["pair"][0] is None
    same(jac["pair"][1], {"w": np.zeros(2), "b": None, "t": (6.0, None),
                          "empty": [None, {"z": None}]}, t)


def test_jacfwd_jacrev_hessian_and_hvp() -> None:
    for jac in (dk.jacfwd, dk.jacrev):
        same(jac(lambda p: p["w"] * 2.0)({"w": W, "b": None}),
             {"w": 2.0 * np.eye(2), "b": None})
    # as JAX: H[i][j] per leaf pair, None where a subtree is None (on both levels)
    h = dk.hessian(lambda p: p["x"] ** 3)({"x": 2.0, "b": None})
    assert h == {"x": {"x": 12.0, "b": None}, "b": None}
    hv = dk.hvp(loss)(PARAMS, {"w": np.array([1.0, 0.0]), "b": None, "t": (1.0, None),
                               "empty": [None, {"z": None}]})
    # H = [[2t I, 2w], [2w^T, 0]]: (2 t e1 + 2 w, 2 w . e1)
    same(hv, {"w": np.array([8.0, 4.0]), "b": None, "t": (2.0, None), "empty": [None, {"z": None}]})


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_blocks_on_every_backend(backend: str) -> None:
    h = dk.hessian(lambda p: p["x"] ** 3 * p["y"], backend=backend)({"x": 2.0, "n": None, "y": 1.5})
    assert h["n"] is None and h["x"]["n"] is None and h["y"]["n"] is None
    t = 1e-4 if backend == "numeric" else 1e-12
    same(h["x"]["x"], 18.0, t)
    same(h["x"]["y"], 12.0, t)
    same(h["y"]["y"], 0.0, t)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_with_none_in_primals_tangents_and_output(backend: str) -> None:
    tangent = {"w": np.array([1.0, 1.0]), "b": None, "t": (1.0, None), "empty": [None, {"z": None}]}
    y, y_dot = dk.jvp(loss, (PARAMS,), (tangent,), backend=backend)
    assert abs(y - 15.0) <= 1e-12 * 15
    assert abs(float(y_dot) - 23.0) <= tol(backend) * 23  # 2 t (w1 + w2) + |w|^2
    out, out_dot = dk.jvp(lambda x: {"y": 2.0 * x, "none": None}, (1.5,), (1.0,), backend=backend)
    assert out["none"] is None and out_dot["none"] is None
    assert abs(out_dot["y"] - 2.0) <= tol(backend) * 2
    assert dk.jvp(lambda x: None, (1.0,), (1.0,), backend=backend) == (None, None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vjp_cotangent_of_a_none_output_is_none(backend: str) -> None:
    def f(p: Any) -> Any:
        return {"y": p["w"] * p["t"][0], "none": None}

    y, pull = dk.vjp(f, PARAMS, backend=backend)
    assert y["none"] is None
    (g,) = pull({"y": np.ones(2), "none": None})
    same(g, {"w": np.array([3.0, 3.0]), "b": None, "t": (3.0, None), "empty": [None, {"z": None}]},
         tol(backend))
    with pytest.raises(dk.DiffkitError, match="structure"):  # (JAX: "unexpected tree structure")
        pull({"y": np.ones(2), "none": 1.0})


def test_vmap_with_none_in_arguments_in_axes_and_results() -> None:
    P = {"w": np.ones((4, 2)), "b": None}
    X = np.arange(8.0).reshape(4, 2)
    out = dk.vmap(lambda p, x: {"o": dnp.sum(p["w"] * x), "n": None})(P, X)
    assert out["n"] is None
    np.testing.assert_array_equal(out["o"], X.sum(axis=1))
    for axes in (({"w": 0, "b": None}, 0), ({"w": 0, "b": 0}, 0)):  # an axis for None: no leaf
        np.testing.assert_array_equal(
            dk.vmap(lambda p, x: dnp.sum(p["w"] * x), in_axes=axes)(P, X), X.sum(axis=1))
    assert dk.vmap(lambda n, x: x * 2.0, in_axes=(None, 0))(None, X[:, 0]).tolist() == [0, 4, 8, 12]
    # per-example gradients of a dict with a None entry
    g = dk.vmap(dk.grad(lambda p, x: dnp.sum(p["w"] * x)), in_axes=(None, 0))({"w": W, "b": None}, X)
    assert g["b"] is None
    np.testing.assert_array_equal(g["w"], X)
    out = dk.vmap(lambda x: (x, None), out_axes=(0, None))(X[:, 0])
    assert out[1] is None


def test_jit_and_compiled_programs_tell_none_from_a_leaf() -> None:
    """A program built for {"a": x, "b": None} is not reused for {"a": None, "b": x}."""
    f = dk.jit(lambda d: (0.0 if d["a"] is None else 2.0 * d["a"])
               + (0.0 if d["b"] is None else 10.0 * d["b"]))
    assert float(f({"a": 1.0, "b": None})) == 2.0
    assert float(f({"a": None, "b": 1.0})) == 10.0
    g = dk.grad(lambda d, s: (0.0 if d["a"] is None else s * d["a"] ** 2)
                + (0.0 if d["b"] is None else d["b"] ** 3), backend="compiled")
    assert g({"a": 1.0, "b": None}, 1.0) == {"a": 2.0, "b": None}
    assert g({"a": None, "b": 1.0}, 1.0) == {"a": None, "b": 3.0}


def test_namedtuples_stop_gradient_and_other_transforms() -> None:
    Pair = collections.namedtuple("Pair", "x extra")
    assert dk.grad(lambda p: p.x ** 2)(Pair(3.0, None)) == Pair(6.0, None)
    assert dk.stop_gradient({"a": None, "b": 1.0}) == {"a": None, "b": 1.0}
    # solvers and integrators take parameter trees with None in them
    g = dk.grad(lambda p: dk.fixed_point(lambda x, q: 0.5 * x + q["c"], 0.0, p))({"c": 1.0, "u": None})
    assert g == {"c": 2.0, "u": None}  # x* = 2c
    k = 0.5
    g = dk.grad(lambda p: dk.odeint(lambda y, t, q: -q["k"] * y, 1.0, np.array([0.0, 1.0]), p,
                                    rtol=1e-12, atol=1e-12)[-1])({"k": k, "u": None})
    assert g["u"] is None and abs(g["k"] + np.exp(-k)) <= 1e-9  # d/dk e^-k


def test_optimizer_helpers_skip_none() -> None:
    from diffkit.optim import clip_by_global_norm

    clipped, norm = clip_by_global_norm({"w": np.array([3.0, 4.0]), "b": None}, 1.0)
    assert norm == 5.0 and clipped["b"] is None
    np.testing.assert_allclose(clipped["w"], [0.6, 0.8])


@pytest.mark.jax
def test_the_structures_are_jax_s() -> None:
    """The same calls in JAX give the same trees (None where diffkit gives None)."""
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    p = {"w": 3.0, "b": None, "t": (2.0, None)}

    def f(q: Any, xp: Any) -> Any:
        return q["w"] ** 2 * q["t"][0]

    def to_np(tree: Any) -> Any:
        return jax.tree_util.tree_map(lambda v: np.asarray(v, dtype=float), tree)

    same(dk.grad(lambda q: f(q, dnp))(p), to_np(jax.grad(lambda q: f(q, jnp))(p)))
    same(dk.hessian(lambda q: f(q, dnp))(p), to_np(jax.hessian(lambda q: f(q, jnp))(p)))

    def g(q: Any) -> Any:
        return {"y": q["w"] * 2.0, "none": None}

    same(dk.jacobian(g)(p), to_np(jax.jacobian(g)(p)))
    _, pull = dk.vjp(g, p)
    _, jpull = jax.vjp(g, p)
    same(pull({"y": 1.0, "none": None}), to_np(jpull({"y": 1.0, "none": None})))
    assert jax.jvp(lambda x: None, (1.0,), (1.0,)) == (None, None) == dk.jvp(lambda x: None, (1.0,), (1.0,))
    (v, aux), gr = dk.value_and_grad(lambda q: (f(q, dnp), {"a": None}), has_aux=True)(p)
    (jv, jaux), jgr = jax.value_and_grad(lambda q: (f(q, jnp), {"a": None}), has_aux=True)(p)
    assert aux == jaux and float(v) == float(jv)
    same(gr, to_np(jgr))


@pytest.mark.parametrize("peer", [pytest.param("jax", marks=pytest.mark.jax),
                                  pytest.param("torch", marks=pytest.mark.torch),
                                  pytest.param("autograd", marks=pytest.mark.autograd)])
def test_peer_backends_see_the_leaves_only(peer: str) -> None:
    needs(peer)
    same(dk.grad(loss, backend=peer)(PARAMS), GRAD)
    # (an array output: the torch peer does not take container outputs yet, None or not)
    same(dk.jacobian(lambda p: p["w"] * 2.0, backend=peer)({"w": W, "b": None}),
         {"w": 2.0 * np.eye(2), "b": None})
