"""The compiled backend: graphs, passes, generated code, transforms and errors.

Derivatives are checked against closed forms, central differences of plain numpy code,
and (on the random programs of ``strategies.py``) the 40-digit reference, with the same
tolerances as the eager backends.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, central_diff
from hypothesis import given, settings, HealthCheck

import diffkit as dk
import diffkit.numpy as dnp
import strategies as S
from diffkit.compiler import passes
from diffkit.ir.tracer import trace_graph

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)


def baydin(x1, x2):
    """Baydin et al. (2018), Table 2: f(x1, x2) = ln(x1) + x1 x2 - sin(x2)."""
    return dnp.log(x1) + x1 * x2 - dnp.sin(x2)


def rosenbrock(x):
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    i = np.arange(n - 1)
    h[i, i] = 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    h[i + 1, i + 1] += 200.0
    h[i, i + 1] = h[i + 1, i] = -400.0 * x[:-1]
    return h


# ---------------------------------------------------------------- the graph


def test_graph_prints_as_a_typed_wengert_list():
    g = dk.make_graph(lambda x, y: dnp.sum(dnp.sin(x) * y))(np.zeros(3), 2.0)
    assert str(g).splitlines() == [
        "graph (x: f64[3], y: f64[]) -> f64[]",
        "  v1: f64[3] = sin(x)",
        "  v2: f64[3] = mul(v1, y)",
        "  v3: f64[] = sum(v2, axis=(-1,), keepdims=False)",
        "  return v3"]
    assert len(g) == 3 and "<pre>" in g._repr_html_()


def test_static_arguments_are_baked_in():
    g = dk.make_graph(lambda x, n: x ** n, static_argnums=1)(np.ones(2, np.float32), 3)
    assert [str(line) for line in g.lines()] == [
        "graph (x: f32[2]) -> f32[2]", "  v1: f32[2] = power(x, 3)", "  return v1"]


def test_comparisons_record_masks_and_where_becomes_select():
    g = dk.make_graph(lambda x: dnp.where(x > 0, x, 0.0))(np.zeros(2))
    assert [e.prim.name for e in g.eqns] == ["greater", "select"]
    assert g.eqns[0].out.dtype == np.bool_


# ---------------------------------------------------------------- passes, exact counts


def _count(pass_, f, *args):
    g = trace_graph(f, args)
    return len(g), len(pass_(g))


def test_constant_folding():
    """Constants appear once identities have replaced values: x * zeros is a fill (one
    number, 0), exp of a fill is a fill (exp(0) = 1, computed on the number), 1 * x is x;
    exp of a constant array is folded into a constant."""
    z = np.zeros(2)
    g = trace_graph(lambda x: dnp.exp(x * z) * x, (np.ones(2),))
    g = passes.simplify(g)
    assert [e.prim.name for e in g.eqns] == ["broadcast_to", "broadcast_to"]  # dead fills
    assert g.outputs == g.inputs and len(passes.dce(g)) == 0
    c = np.array([1.0, 2.0])
    g = trace_graph(lambda x: x * dnp.exp(x * z + c), (np.ones(2),))
    sizes = [len(g)]
    for p in (passes.simplify, passes.fold, passes.dce):
        g = p(g)
        sizes.append(len(g))
    assert sizes == [4, 3, 2, 1] and [e.prim.name for e in g.eqns] == ["mul"]
    assert_close(g.eqns[0].inputs[1].value, np.exp(c), rtol=1e-15)


def test_a_fill_is_never_built_at_setup():
    """The seed of a gradient, spread over 10^6 entries by sum, stays one number: the graph
    holds no array constant at all, and the gradient is exact (in the unfused program)."""
    be = dk.backend("compiled", fuse=False)
    x = np.linspace(-1.0, 1.0, 10**6)
    assert_close(dk.grad(lambda x: dnp.sum(x * 3.0 - 1.0), backend=be)(x), np.full(x.size, 3.0),
                 rtol=0, atol=0)
    assert be.last.graph.eqns == [] or all(
        not isinstance(a, passes.Const) for e in be.last.graph.eqns for a in e.inputs)
    assert "np.broadcast_to(3.0, (1000000,))" in be.last.source


def test_algebraic_identities():
    assert _count(passes.simplify, lambda x: (x * 1.0 + 0.0) / 1.0 - 0.0, np.ones(2)) == (4, 0)
    assert _count(passes.simplify, lambda x: -(-dnp.sin(x)), np.ones(2)) == (3, 2)  # -(-v) = v
    assert _count(lambda g: passes.dce(passes.simplify(g)), lambda x: -(-dnp.sin(x)),
                  np.ones(2)) == (3, 1)  # and the inner negation is dead
    g = passes.simplify(trace_graph(lambda x: dnp.sum(dnp.broadcast_to(x, (4,))), (1.5,)))
    assert [e.prim.name for e in g.eqns] == ["broadcast_to", "mul"]  # sum(broadcast) = 4 x
    assert [e.prim.name for e in passes.dce(g).eqns] == ["mul"]


def test_an_outer_product_becomes_a_fused_multiply_with_the_same_bits():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((7, 1)), rng.standard_normal((1, 5))
    g = passes.simplify(trace_graph(lambda a: dnp.matmul(a, b) + 1.0, (a,)))
    assert [e.prim.name for e in g.eqns] == ["mul", "add"]
    assert np.array_equal(dk.jit(lambda a: a @ b)(a), a @ b)  # BLAS's k = 1 product, bitwise
    assert [e.prim.name for e in passes.simplify(trace_graph(lambda a: a @ b.T, (a.T,))).eqns] \
        == ["matmul"]  # an inner dimension of 5 stays a library call
    be = dk.backend("compiled")
    y = rng.standard_normal((7, 5))
    grad = dk.grad(lambda a: dnp.sum(dnp.tanh(a @ b) * y), backend=be)(a)
    np.testing.assert_allclose(grad, ((1 - np.tanh(a @ b) ** 2) * y) @ b.T, rtol=1e-14)
    assert be.last.fusion.startswith("1 kernel, 1 library call")  # the adjoint's (7,5) @ (5,1)


def test_a_ravelled_tree_is_taken_apart_for_free():
    rng = np.random.default_rng(5)
    params = (rng.standard_normal((3, 4)), rng.standard_normal(4), 0.5)
    X = rng.standard_normal((6, 3))

    def loss(p):
        W, b, c = p
        return dnp.sum(dnp.tanh(X @ W + b) * c)

    step = dk.jit(dk.value_and_grad(loss))
    value, (gW, gb, gc) = step(params)
    names = [e.prim.name for e in step.program(params).graph.eqns]
    assert "concatenate" not in names and "scatter_add" not in names and "getitem" not in names
    t = np.tanh(X @ params[0] + params[1])
    d = (1 - t**2) * 0.5
    np.testing.assert_allclose(gW, X.T @ d, rtol=1e-13)
    np.testing.assert_allclose(gb, d.sum(axis=0), rtol=1e-13)
    assert gc == pytest.approx(t.sum(), rel=1e-13) and value == pytest.approx(0.5 * t.sum())
    g = trace_graph(lambda v: dnp.concatenate([v, v * 2.0])[..., 1:3], (np.ones(3),))
    assert "getitem" in [e.prim.name for e in passes.simplify(g).eqns]  # straddles: kept


def test_multiplication_by_a_zero_adjoint_disappears():
    z = np.zeros(3)
    g = trace_graph(lambda x: dnp.sin(x) * z + dnp.cos(x), (np.ones(3),))
    assert [e.prim.name for e in passes.dce(passes.simplify(g)).eqns] == ["cos"]


def test_common_subexpressions():
    assert _count(passes.cse, lambda x: dnp.sin(x) + dnp.sin(x), np.ones(2)) == (3, 2)


def test_dead_code():
    assert _count(passes.dce, lambda x: [dnp.cos(x), dnp.sin(x)][1], np.ones(2)) == (2, 1)


def test_gradient_graph_is_small_and_skips_unused_adjoints():
    """grad of sum(sin(x) * y): sin, mul, sum, then x_bar = y * cos(x): the seed, its
    reshape and broadcast (a fill of ones) and ones * y are gone; the constant y gets no
    adjoint at all."""
    be = dk.backend("compiled")
    y = np.array([1.0, 2.0, 3.0])
    g = dk.grad(lambda x: dnp.sum(dnp.sin(x) * y), backend=be)(np.zeros(3))
    assert_close(g, y)
    ops = [e.prim.name for e in be.last.graph.eqns]
    assert ops == ["sin", "mul", "sum", "cos", "mul"]
    assert be.last.traced_eqns == 9  # seed, reshape, broadcast, ones * y: simplified away


def test_buffer_plan_reuses_dying_intermediates():
    g = trace_graph(lambda x: dnp.exp(dnp.sin(x) * 2.0), (np.ones(1000),))
    plan, saved = passes.plan_buffers(g)
    names = g.names()
    assert {names[k]: names[v] for k, v in plan.items()} == {"v2": "v1", "v3": "v2"}
    assert saved == 2 * 8000
    f = dk.jit(lambda x: dnp.exp(dnp.sin(x) * 2.0), fuse=False)
    x = np.linspace(0, 1, 1000)
    assert_close(f(x), np.exp(np.sin(x) * 2.0), rtol=1e-15)
    assert "out=v1" in f.program(x).source


# ---------------------------------------------------------------- generated code


def test_generated_code_of_baydin_table_2():
    be = dk.backend("compiled")
    g = dk.grad(baydin, argnums=(0, 1), backend=be)(2.0, 5.0)
    assert g[0] == pytest.approx(1 / 2.0 + 5.0, rel=1e-15)
    assert g[1] == pytest.approx(2.0 - math.cos(5.0), rel=1e-15)
    from diffkit.compiler.show import adjoint_program

    prog = adjoint_program(baydin, (2.0, 5.0))
    src = prog.source
    assert src.splitlines()[0] == "def f(x1, x2):"
    for line in ["v1 = np.log(x1)", "v2 = x1 * x2", "v4 = np.sin(x2)", "x2_bar = "]:
        assert line in src
    value, g1, g2 = prog(np.float64(2.0), np.float64(5.0))
    assert value == pytest.approx(math.log(2) + 10 - math.sin(5), rel=1e-15)
    assert (g1, g2) == pytest.approx((5.5, 2 - math.cos(5.0)), rel=1e-15)


def test_generated_source_holds_only_generated_names():
    """User text never reaches the source: constants are passed in the namespace."""
    secret = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    f = dk.jit(lambda x: x * secret)
    src = f.program(np.ones(5)).source
    assert "c1" in src and "1.0, 2.0" not in src
    assert_close(f(np.ones(5)), secret)


def test_outputs_are_fresh_arrays():
    c = np.ones(3)
    f = dk.jit(lambda x: c)
    out = f(np.zeros(3))
    out[0] = 7.0
    assert f(np.zeros(3))[0] == 1.0


# ---------------------------------------------------------------- derivatives


def test_adjoints_of_one_slice_are_scattered_once():
    """x[:-1] is used twice: its two adjoints are added before one scatter, not after two."""
    be = dk.backend("compiled", fuse=False)
    x = np.array([0.3, -1.2, 0.8, 1.5])
    assert_close(dk.grad(rosenbrock, backend=be)(x), rosenbrock_grad(x), rtol=1e-14)
    ops = [e.prim.name for e in be.last.graph.eqns]
    assert ops.count("scatter_add") == 2 and len(ops) == 19  # (-(2·u), 100·(2·v) folded)
    last = be.last.source.splitlines()[-2]  # x_bar written into a scatter's buffer
    assert last.startswith("    x_bar = np.add(") and last.endswith(", out=v14)")


def test_rosenbrock_gradient_and_hessian_match_closed_forms():
    x = np.array([0.3, -1.2, 0.8, 1.5, 2.0])
    assert_close(dk.grad(rosenbrock, backend="compiled")(x), rosenbrock_grad(x), rtol=1e-13)
    assert_close(dk.hessian(rosenbrock, backend="compiled")(x), rosenbrock_hessian(x), rtol=1e-13)


def test_every_transform():
    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    f = lambda x: dnp.sin(x) * x  # noqa: E731
    d = np.cos(x) * x + np.sin(x)
    y, t = dk.jvp(f, (x,), (v,), backend="compiled")
    assert_close(y, np.sin(x) * x, rtol=1e-15)
    assert_close(t, d * v, rtol=1e-14)
    y, pull = dk.vjp(f, x, backend="compiled")
    assert_close(pull(v)[0], d * v, rtol=1e-14)
    assert_close(dk.jacobian(f, backend="compiled")(x), np.diag(d), rtol=1e-14)
    assert_close(dk.derivative(f, backend="compiled")(x), d, rtol=1e-14)
    g = lambda x: dnp.sum(x[:2] * x[1:]) ** 2  # noqa: E731  (more inputs than outputs)
    assert_close(dk.jacobian(g, backend="compiled")(x), central_diff(lambda z: np.sum(z[:2] * z[1:]) ** 2, x), rtol=1e-8)
    (value, aux), grad = dk.value_and_grad(lambda x: (dnp.sum(x ** 2), x * 2.0), has_aux=True,
                                           backend="compiled")(x)
    assert value == pytest.approx(np.sum(x ** 2), rel=1e-15)
    assert_close(aux, 2.0 * x)
    assert_close(grad, 2.0 * x)


def test_nested_gradients():
    """grad of grad: compiled over compiled, and mixed with the eager backends."""
    f = lambda x: x ** 3 * dnp.sin(x)  # noqa: E731
    exact = lambda x: 6 * x * np.sin(x) + 6 * x**2 * np.cos(x) - x**3 * np.sin(x)  # noqa: E731
    for outer, inner in [("compiled", "compiled"), ("compiled", "reverse"),
                         ("forward", "compiled"), ("reverse", "compiled")]:
        d2 = dk.grad(dk.grad(f, backend=inner), backend=outer)(0.7)
        assert d2 == pytest.approx(exact(0.7), rel=1e-13), (outer, inner)


def test_masks_and_ties_differentiate_like_the_eager_backends():
    x = np.array([-1.0, 2.0, 0.5])
    f = lambda x: dnp.sum(dnp.relu(x) * x + dnp.maximum(x, 0.5))  # noqa: E731
    assert_close(dk.grad(f, backend="compiled")(x), np.array([0.0, 5.0, 1.5]), rtol=1e-15)


def test_transforms_of_a_jitted_function_run_its_graph():
    """grad, vmap and a compiled grad of dk.jit(f) run f's optimized graph on their boxes:
    f's Python runs once (its trace), whatever the transform."""
    calls = []

    def f(x):
        calls.append(1)  # a Python side effect: seen only while tracing
        return dnp.sum(dnp.sin(x) * x)

    jf = dk.jit(f)
    x = np.array([0.1, 0.2, 0.3])
    d = lambda x: np.cos(x) * x + np.sin(x)  # noqa: E731
    assert_close(dk.grad(jf)(x), d(x), rtol=1e-15)
    assert_close(dk.grad(jf, backend="forward")(2 * x), d(2 * x), rtol=1e-15)
    assert_close(dk.vmap(jf)(np.stack([x, 2 * x])),
                 [np.sum(np.sin(x) * x), np.sum(np.sin(2 * x) * 2 * x)], rtol=1e-15)
    outer = dk.backend("compiled")
    assert_close(dk.grad(jf, backend=outer)(x), d(x), rtol=1e-15)
    assert [e.prim.name for e in outer.last.graph.eqns].count("sin") == 1  # inlined
    assert len(calls) == 1 and jf.cache_info().misses == 1


def test_grad_with_tuple_argnums_traces_once():
    """f's Python runs once per signature: argnums tuples and undifferentiated numbers
    do not retrace at every call."""
    calls = []

    def f(x1, x2):
        calls.append(1)
        return baydin(x1, x2)

    g = dk.grad(f, argnums=(0, 1), backend="compiled")
    for x1, x2 in [(2.0, 5.0), (3.0, 1.0), (0.5, -2.0)]:
        assert g(x1, x2) == pytest.approx((1 / x1 + x2, x1 - math.cos(x2)), rel=1e-15)
    assert len(calls) == 1

    def h(x, n):
        calls.append(1)
        return x ** n

    dh = dk.grad(h, backend="compiled")
    assert (dh(2.0, 3), dh(2.0, 2), dh(3.0, 2), dh(3.0, 3)) == (12.0, 4.0, 6.0, 27.0)
    assert len(calls) <= 3  # (once per value of n at most)


def test_jit_composes_with_eager_transforms():
    f = dk.jit(lambda x: dnp.sum(dnp.exp(x)))
    x = np.array([0.1, 0.2])
    assert_close(dk.grad(f)(x), np.exp(x), rtol=1e-15)


# ---------------------------------------------------------------- random programs


SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
BRANCHING = ("if ", "while ", "max(")


def _compiled_verdict(j: S.Judgement, program: S.Program) -> None:
    for v in j.verdicts:
        if v.status == "agree" or v.status == "skipped" or v.backend == "reference":
            continue
        branches = any(w in program.source.replace("if depth", "") for w in BRANCHING)
        assert branches and "traced array is needed" in v.message, j.report()


@SETTINGS
@given(S.programs("grad", max_ops=5))
def test_random_gradients_agree_with_the_reference(program):
    _compiled_verdict(S.judge(program, backends=("compiled",)), program)


@SETTINGS
@given(S.programs("hessian", max_ops=4))
def test_random_hessians_agree_with_the_reference(program):
    _compiled_verdict(S.judge(program, backends=("compiled",)), program)


@SETTINGS
@given(S.programs("jacobian", max_ops=4))
def test_random_jacobians_agree_with_the_reference(program):
    _compiled_verdict(S.judge(program, backends=("compiled",)), program)


@SETTINGS
@given(S.flow_programs())
def test_programs_with_value_branches_fail_clearly_or_agree(program):
    _compiled_verdict(S.judge(program, backends=("compiled",)), program)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(S.programs("grad", max_ops=4))
def test_random_nested_gradients_agree(program):
    from hypothesis import assume

    assume(np.size(program.x) <= 4)
    saved = S.NESTINGS
    S.NESTINGS = (("compiled", "compiled"), ("forward", "compiled"))
    try:
        _compiled_verdict(S.judge_nested(program), program)
    finally:
        S.NESTINGS = saved


# ---------------------------------------------------------------- errors and caching


def test_value_dependent_branch_names_the_users_line():
    def f(x):
        if x > 0:  # the line the message must name
            return x
        return -x

    with pytest.raises(dk.NotApplicable) as err:  # (a DiffkitError: one line, n/a in tables)
        dk.grad(f, backend="compiled")(1.0)
    msg = str(err.value)
    assert "test_compiled.py:" in msg and "(if x > 0:" in msg
    assert "dnp.where" in msg and "static_argnums" in msg and "\n" not in msg
    assert dk.grad(f, backend="reverse")(1.0) == 1.0  # the eager backends branch fine


def test_a_rule_that_reads_values_is_not_applicable():
    """A derivative rule (a file of diffkit/primitives) that branches on a value cannot be
    traced: the cell is n/a with the reason, not a frozen branch."""
    import os

    from diffkit import primitives
    from diffkit.core import Primitive

    ns: dict = {}
    path = os.path.join(os.path.dirname(primitives.__file__), "branchy_rule.py")
    exec(compile("def d(y_bar, y, x):\n    return y_bar * (1.0 if x > 0 else -1.0)\n", path,
                 "exec"), ns)
    branchy = Primitive("branchy", np.abs, jvp=(lambda t, y, x: t * ns["d"](1.0, y, x),),
                        vjp=(ns["d"],), broadcasts=True)
    with pytest.raises(dk.NotApplicable, match=r"^n/a: .*branchy_rule.py:2.*eager backend"):
        dk.grad(lambda x: branchy(x), backend="compiled")(1.0)
    assert dk.grad(lambda x: branchy(x), backend="reverse")(-1.0) == -1.0


def test_products_with_zeros_trace_the_general_rule():
    for x in ([1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0]):
        x = np.array(x)
        g = np.array([x[1] * x[2], x[0] * x[2], x[0] * x[1]])
        assert_close(dk.grad(dnp.prod, backend="compiled")(x), g, rtol=1e-15, atol=0)
        h = np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
        assert_close(dk.hessian(dnp.prod, backend="compiled")(x), h, rtol=1e-15, atol=0)


def test_cache_per_shape_dtype_and_static_value():
    f = dk.jit(lambda x, n: dnp.sum(x ** n), static_argnums=1)
    assert f(np.ones(3), 2) == 3.0
    assert f(np.full(3, 2.0), 2) == 12.0
    assert f.cache_info() == (1, 1, 1)
    assert f(np.ones(4), 2) == 4.0           # new shape: traced again
    assert f(np.ones(4, np.float32), 2) == 4.0   # new dtype
    assert f(np.full(4, 2.0), 3) == 32.0        # new static value
    assert f.cache_info() == (1, 4, 4)
    be = dk.backend("compiled")
    g = dk.grad(lambda x: dnp.sum(x ** 2), backend=be)
    g(np.ones(2)), g(np.ones(2)), g(np.ones(3))
    assert len(be.programs) == 2


def test_parameter_tuples_are_keyed_by_structure_shape_and_dtype():
    loss = dk.jit(lambda p, x: dnp.sum(dnp.tanh(x @ p[0] + p[1]) * p[2]))
    x, W, b = np.linspace(-1.0, 1.0, 6).reshape(2, 3), np.full((3, 2), 0.5), np.ones(2)
    expected = np.sum(np.tanh(x @ W + b) * 2.0)
    assert loss((W, b, np.array(2.0)), x) == pytest.approx(expected, rel=1e-15)
    assert loss((W, b, np.float64(2.0)), x) == pytest.approx(expected, rel=1e-15)
    assert loss.cache_info().misses == 2    # a 0-d array and a number: both scalar leaves
    assert loss((2 * W, b, np.array(2.0)), x) == pytest.approx(
        np.sum(np.tanh(x @ (2 * W) + b) * 2.0), rel=1e-15)
    assert loss.cache_info().hits == 1
    assert loss([W, b, np.array(2.0)], x) == pytest.approx(expected, rel=1e-15)  # a list
    assert loss((W.astype(np.float32), b, np.array(2.0)), x) == pytest.approx(expected)
    assert loss.cache_info() == (1, 4, 4)


def test_a_reshape_of_a_reshape_is_one_or_none():
    f = dk.jit(lambda x: dnp.sum(dnp.reshape(dnp.reshape(x, (6,)), (3, 2)) ** 2)
               + dnp.sum(dnp.reshape(dnp.reshape(x, (6,)), (2, 3)) * x))
    x = np.arange(6.0).reshape(2, 3)
    assert f(x) == 2 * np.sum(x ** 2)
    reshapes = [e for e in f.program(x).graph.eqns if e.prim.name == "reshape"]
    assert [e.out.shape for e in reshapes] == [(3, 2)] and reshapes[0].inputs[0].shape == (2, 3)


@pytest.mark.parametrize("f, folds", [
    (lambda x: 100.0 * (2.0 * x), True),      # a power of two inside, |c| >= 1 outside
    (lambda x: -(3.0 * x), True),
    (lambda x: 0.5 * (2.0 * x), False),       # 2x overflows where x is not: keep the inf
    (lambda x: 3.0 * (0.5 * x), False),       # 0.5x rounds a subnormal x: keep that rounding
    (lambda x: 3.0 * (6.0 * x), False),       # 6x rounds: (3·6)x could differ in the last bit
])
def test_constant_factors_fold_only_where_the_bits_are_the_same(f, folds):
    x = np.array([1.1, -0.7, 1e308, -1.7e308, 5e-324, -2.5e-323, 3e-310, 0.1, 1 / 3])
    jf = dk.jit(f)
    with np.errstate(over="ignore", under="ignore"):
        np.testing.assert_array_equal(jf(x), f(x))  # numpy's own answer, bit for bit
    muls = [e for e in jf.program(x).graph.eqns if e.prim.name in ("mul", "neg")]
    assert (len(muls) == 1) == folds


def test_float_arrays_of_the_same_shape_share_one_program_and_a_list_is_a_tree():
    f = dk.jit(lambda w, X: dnp.sum(dnp.sin(X @ w)))
    w, X = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    expected = np.sum(np.sin(X @ w))
    assert_close(f(w, X), expected, rtol=1e-15, atol=0)          # arrays (the quick key)
    assert_close(f(w, X.astype(np.int64) + 0.0), expected, rtol=1e-15, atol=0)
    assert f.cache_info() == (1, 1, 1)
    g = dk.jit(lambda t: t[0] * t[1])  # a list is a tree of leaves, as in JAX
    assert g([2.0, 3.0]) == 6.0 and g.cache_info().misses == 1
    assert f(w, X) == f(w, X) and f.cache_info() == (3, 1, 1)
    assert f(w.astype(np.float32), X.astype(np.float32)).dtype == np.float32
    assert f.cache_info() == (3, 2, 2)


def test_bad_input_is_one_clear_line():
    with pytest.raises(dk.DiffkitError, match="returned a str"):
        dk.jit(lambda x: "no")(1.0)
    with pytest.raises(dk.DiffkitError, match="numpy.fft.hfft"):
        dk.jit(lambda x: np.fft.hfft(x))(np.ones(4))
    kept = []
    dk.jit(lambda x: kept.append(x) or x)(1.0)
    with pytest.raises(dk.DiffkitError, match="escaped"):
        dnp.sin(kept[0])
    with pytest.raises(dk.DiffkitError, match="hashable"):
        dk.jit(lambda x, s: x, static_argnums=1)(1.0, [1])
    with pytest.raises(dk.DiffkitError, match="scalar"):
        dk.grad(lambda x: x * 2.0, backend="compiled")(np.ones(2))


def test_compiled_is_a_registered_backend():
    assert "compiled" in dk.backends()
    assert dk.backend("compiled").name == "compiled"


# ---------------------------------------------------------------- the command line


def _cli(capsys, *argv):
    from diffkit_cli.main import main

    try:
        main(list(argv))
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr()
    return capsys.readouterr().out


def test_show_code_prints_the_forward_and_adjoint_program(capsys):
    out = _cli(capsys, "show", "--code", "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2,x2=5")
    assert "def f(x1, x2):" in out and "    v2 = x1 * x2" in out and "x1_bar = x2 + v8" in out
    assert "x1_bar = ∂f/∂x1 = 5.5" in out and f"x2_bar = ∂f/∂x2 = {2 - math.cos(5.0)!r}" in out


def test_compare_shows_the_graph_size_and_the_passes(capsys):
    out = _cli(capsys, "compare", "rosenbrock", "--dim", "5", "--backends", "reverse,compiled",
               "--repeat", "1")
    assert re.search(r"compiled\s.*\d+ eqns", out)
    assert re.search(r"compiled: \d+ equations → \d+ after simplify/fold/cse/dce", out)
    assert "compiled" in _cli(capsys, "list")


@pytest.mark.parametrize("c", [2.0, np.array([2.0])])
def test_a_broadcast_operand_is_never_an_out_buffer(c: Any) -> None:
    """d/dx, d/dc of sum(x² c) = (2 x c, sum x²), c a number or size-1 array broadcast
    against x: the constant-folding rules keep the broadcast, so no line writes its
    result into the smaller operand."""
    x = np.arange(4.0)
    gx, gc = dk.jit(dk.grad(lambda x, c: dnp.sum(x**2 * c), argnums=(0, 1)))(x, c)
    assert_close(gx, 4.0 * x, rtol=1e-15)
    assert np.shape(gc) == np.shape(c) and np.allclose(gc, 14.0, rtol=1e-15)


def test_a_loop_until_np_any_runs_eagerly_and_is_not_applicable_when_traced():
    def heron(a):  # sqrt(a) by Heron's iteration: the trip count depends on a's value
        y = 1.0 + 0.0 * a
        while np.any(np.abs(y * y - a) > 1e-12 * a):
            y = 0.5 * (y + a / y)
        return y

    for backend in ("forward", "reverse"):
        assert dk.derivative(heron, backend=backend)(2.0) == pytest.approx(0.5 / math.sqrt(2))
    with pytest.raises(dk.NotApplicable, match="any depends on the entries' values, which a "
                                               "graph traced once for all values does not know"):
        dk.derivative(heron, backend="compiled")(2.0)
    x = np.array([[1.0, -1.0], [2.0, 3.0]])
    assert dnp.all(x > 0, axis=1).tolist() == [False, True]
    assert dnp.any(x < 0, keepdims=True).tolist() == [[True]]
    assert dk.grad(lambda v: dnp.sum(v[dnp.all(v > 0, axis=1)] ** 2))(x).tolist() == \
        [[0.0, 0.0], [4.0, 6.0]]


def test_a_catalog_function_that_branches_is_named_at_its_own_line():
    record = dk.compare("piecewise", backends=["compiled"]).records()[0]
    assert record["status"] == "n/a"
    assert re.search(r"needed at catalog\.py:\d+ \(if x < 0\.0:\)", record["message"])


@pytest.mark.parametrize("spec, fuse, parallel", [("compiled", True, False),
                                                  ("compiled[fuse=false]", False, False),
                                                  ("compiled[parallel=true]", True, True)])
def test_a_staged_call_keeps_the_backends_options(spec, fuse, parallel):
    # several arguments (or a tree) stage the whole call as one program: it is built with
    # the options the backend was given, not dk.jit's defaults
    w, X = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    g = dk.grad(lambda w, X: dnp.sum(dnp.sin(X @ w)), backend=spec)
    assert_close(g(w, X), X.T @ np.cos(X @ w), rtol=1e-14, atol=0)
    staged = g.cache_info.__self__  # the dk.jit the backend staged the call in
    assert (staged.fuse, staged.parallel) == (fuse, parallel)
    (program,) = staged.programs.programs.values()
    assert bool(program.fusion) == fuse


def test_a_function_is_traced_once_for_its_value_and_its_pullback():
    """vjp's value and its pullback are two programs; both replay one trace of f."""
    calls = []

    def f(x):
        calls.append(1)
        return dnp.sin(x) * x

    x = np.array([0.5, 1.0, 2.0])
    y, pull = dk.vjp(f, x, backend=dk.backend("compiled"))
    (x_bar,) = pull(np.ones(3))
    np.testing.assert_allclose(y, np.sin(x) * x, rtol=1e-15)
    np.testing.assert_allclose(x_bar, np.cos(x) * x + np.sin(x), rtol=1e-15)
    assert len(calls) == 1
    pull(np.full(3, 2.0))  # a new cotangent: the same programs
    assert len(calls) == 1
