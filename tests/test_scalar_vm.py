"""The tape VM: every opcode against numpy float64 (edge values included), gradients of
scalar programs through it against closed forms and derivative recurrences, random
scalar programs against the 40-digit reference and the plain-float program, the
fallback for an equation it has no opcode for, and the path without numba.
"""

from __future__ import annotations

import itertools
import math
import sys
import warnings

import numpy as np
import pytest
from conftest import assert_close
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import diffkit as dk
import diffkit.numpy as dnp
import diffkit.primitives as P
import strategies as S
from diffkit.backends import backend
from diffkit.compiler import numba_kernels, scalar_vm
from diffkit.ir.graph import Eqn, Graph, Var
from diffkit.ir.tracer import trace_graph
from diffkit.primitives import compare
from diffkit.primitives.lowering import Lowering

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)

F64, BOOL = np.dtype(np.float64), np.dtype(np.bool_)
EDGES = (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.5, 3.0, 1e-310, 700.0, 710.0, -745.5,
         1e308, -1e308, np.inf, -np.inf, np.nan)
PAIRS = (0.0, -0.0, 0.5, -1.0, 2.0, -2.5, 3.0, 1e300, np.inf, -np.inf, np.nan)


COMPARISONS = ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal")


def primitive(name: str):
    return getattr(P, name, None) or getattr(compare, name)


def one_equation(name: str, arity: int) -> Graph:
    """The graph ``out = name(x0, ..., x_{arity-1})`` (a comparison's ``out`` is a bool)."""
    ins = [Var(k, (), F64, f"x{k}") for k in range(arity)]
    bool_out = name in COMPARISONS
    out = Var(arity, (), BOOL if bool_out else F64)
    return Graph(ins, [Eqn(primitive(name), tuple(ins), out)], [out])


def run(graph: Graph, *xs: float) -> list:
    tape, report = scalar_vm.scalar_program(graph)
    assert tape is not None, report
    return tape(xs)


def same(got, want, ulps: int = 2) -> bool:
    """numpy's value: nan where numpy gives nan, the same infinity, else within ``ulps``
    (libm and numpy's own loops may round the last bit differently)."""
    got, want = np.float64(got), np.float64(want)
    if np.isnan(want) or np.isinf(want):
        return bool(np.isnan(got)) if np.isnan(want) else bool(got == want)
    return bool(abs(got - want) <= ulps * np.spacing(abs(want)))


def arity(name: str) -> int:
    """How many operands the primitive takes (comparisons: 2, select: 3)."""
    return 3 if name == "select" else len(primitive(name).vjp) or 2


# ---------------------------------------------------------------- every opcode vs numpy


LOWERED = sorted(n for n in [*P.table(), *COMPARISONS, "select"]
                 if isinstance(primitive(n).lower, Lowering))


@pytest.mark.jit
@pytest.mark.parametrize("name", LOWERED)
def test_every_lowered_primitive_gives_numpys_float64_value(name):
    """Each primitive with a formula in the lowering registry, as the rows of its formula."""
    n = arity(name)
    graph = one_equation(name, n)
    prim = primitive(name)
    points = [(a,) for a in EDGES] if n == 1 else list(itertools.product(PAIRS, repeat=n))
    if name == "select":  # a mask as the condition
        points = [(c, a, b) for c in (0.0, 1.0) for a, b in itertools.product(PAIRS, PAIRS)]
    for xs in points:
        with np.errstate(all="ignore"):  # numpy's ufunc loop, on one-element arrays (its
            args = [np.array([v]) for v in xs]  # scalar fast paths differ: -inf ** 0.5)
            if name == "select":
                args[0] = args[0].astype(bool)
            want = prim.impl(*args)[0]
        (got,) = run(graph, *xs)
        assert type(got) is (np.bool_ if graph.outputs[0].dtype == BOOL else np.float64)
        assert same(got, want, max(2, primitive(name).lower.ulps)), f"{name}{xs}: VM {got!r}, numpy {want!r}"


@pytest.mark.jit
def test_edge_cases_are_inf_and_nan_as_in_numpy_never_an_exception():
    f = dk.jit(lambda x, y: (dnp.log(x), x / x, dnp.exp(y * 1000.0), (x - 2.0) ** 0.5,
                             1.0 / x, x ** -1.0, dnp.sqrt(x - 1.0), dnp.arccosh(x + 0.5)),
               fuse=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either: the VM runs it all
        outs = f(0.0, 1.0)
    assert f.program(0.0, 1.0).vm is not None
    assert outs[0] == -np.inf and np.isnan(outs[1]) and outs[2] == np.inf
    assert np.isnan(outs[3]) and outs[4] == np.inf and outs[5] == np.inf
    assert np.isnan(outs[6]) and np.isnan(outs[7])
    assert all(type(o) is np.float64 for o in outs)


@pytest.mark.jit
def test_a_boolean_output_is_a_numpy_bool_and_a_constant_output_stays_itself():
    f = dk.jit(lambda x: (x > 1.0, dnp.where(x > 1.0, x, -x), 2.5), fuse=True)
    big, y, c = f(2.0)
    assert type(big) is np.bool_ and big and y == 2.0 and c == 2.5
    small, y, _ = f(0.5)
    assert not small and y == -0.5
    assert f.program(2.0).vm is not None


# ---------------------------------------------------------------- gradients through the VM


def loop(x):
    for _ in range(500):
        x = dnp.sin(x) * 0.9 + x * 0.1
    return x


@pytest.mark.jit
def test_scalar_loop_gradient_runs_on_the_vm_and_equals_the_derivative_recurrence():
    g = dk.jit(lambda x: dk.grad(loop)(x), fuse=True)
    for x0 in (0.3, -1.7, 2.9):
        x, dx = x0, 1.0  # x_{k+1} = 0.9 sin x_k + 0.1 x_k, dx_{k+1} = (0.9 cos x_k + 0.1) dx_k
        for _ in range(500):
            x, dx = 0.9 * math.sin(x) + 0.1 * x, (0.9 * math.cos(x) + 0.1) * dx
        assert abs(g(x0) - dx) <= 1e-12 * abs(dx), (x0, g(x0), dx)
    prog = g.program(0.3)
    assert prog.vm is not None and prog.fusion == (
        f"scalar program: {len(prog.graph):,} instructions on the tape VM")
    assert len(prog.graph) > 4000


@pytest.mark.jit
@pytest.mark.parametrize("f, df, xs", [
    (lambda x: x ** 2.5 + x ** 3 + 2.0 ** x + dnp.sqrt(x),
     lambda x: 2.5 * x ** 1.5 + 3 * x ** 2 + math.log(2) * 2 ** x + 0.5 / math.sqrt(x),
     (0.3, 1.0, 4.2)),
    (lambda x: dnp.tanh(dnp.tanh(x) * 2.0 + 1.0) ** 2,
     lambda x: 2 * math.tanh(2 * math.tanh(x) + 1) / math.cosh(2 * math.tanh(x) + 1) ** 2
     * 2 / math.cosh(x) ** 2, (-1.5, 0.0, 0.8)),
    (lambda x: dnp.log(dnp.sigmoid(3.0 * x) + dnp.exp(-x)),
     lambda x: (3 * math.exp(-3 * x) / (1 + math.exp(-3 * x)) ** 2 - math.exp(-x))
     / (1 / (1 + math.exp(-3 * x)) + math.exp(-x)), (-2.0, 0.1, 3.0)),
    (lambda x: dnp.where(x > 0.5, dnp.abs(x) * x, dnp.maximum(x, 0.1) * 3.0),
     lambda x: 2 * abs(x) if x > 0.5 else (3.0 if x > 0.1 else 0.0), (-2.0, 0.3, 0.7)),
    (lambda x: dnp.arctan2(x, 2.0) + dnp.hypot(x, 1.5) + dnp.log1p(x * x) * dnp.cosh(x),
     lambda x: 2 / (x * x + 4) + x / math.hypot(x, 1.5) + 2 * x / (1 + x * x) * math.cosh(x)
     + math.log1p(x * x) * math.sinh(x), (-0.7, 1.3)),
])
def test_gradients_on_the_vm_equal_closed_forms(f, df, xs):
    g = dk.jit(lambda x: dk.grad(f)(x), fuse=True)
    for x in xs:
        assert_close(g(x), df(x), rtol=1e-13)
    assert g.program(xs[0]).vm is not None


@pytest.mark.jit
def test_value_and_grad_of_two_variables_on_the_compiled_backend():
    vg = dk.value_and_grad(lambda x, y: dnp.exp(x * y) - y / x, argnums=(0, 1),
                           backend=backend("compiled", fuse=True))
    value, (gx, gy) = vg(0.5, 2.0)
    assert_close(value, math.exp(1.0) - 4.0, rtol=1e-15)
    assert_close(gx, 2.0 * math.exp(1.0) + 2.0 / 0.25, rtol=1e-14)
    assert_close(gy, 0.5 * math.exp(1.0) - 2.0, rtol=1e-14)


# ---------------------------------------------------------------- random scalar programs


@st.composite
def scalar_programs(draw) -> S.Program:
    try:
        p = S.build_program(S.HypothesisDraw(draw), "grad", 8, shapes=[()])
    except S.Rejected:
        assume(False)
    assume(S.validate(p) is None)
    return p


@pytest.mark.jit
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(scalar_programs())
def test_random_scalar_programs_vm_equals_plain_floats_and_the_reference(program):
    f, x = program.function(), program.point()
    vm = dk.jit(lambda x: dk.grad(f)(x), fuse=True)
    plain = dk.jit(lambda x: dk.grad(f)(x))
    eager = dk.grad(f)(x)
    got = vm(x)
    assert_close(got, plain(x), rtol=1e-12)
    assert_close(got, eager, rtol=1e-10)
    j = S.judge(program, backends=(backend("compiled", fuse=True),))
    assert all(v.status in ("agree", "skipped") for v in j.verdicts), j.report()


# ---------------------------------------------------------------- fallback, no numba


def test_a_graph_with_an_equation_without_lowering_runs_on_plain_floats():
    from diffkit.scipy.special import erf

    g = trace_graph(lambda x: erf(x) * dnp.sin(x), (1.5,))
    assert scalar_vm.encode(g) is None
    f = dk.jit(lambda x: erf(x) * dnp.sin(x), fuse=True)
    assert_close(f(2.5), math.erf(2.5) * math.sin(2.5), rtol=1e-15)
    prog = f.program(2.5)
    assert prog.vm is None and prog.fusion == "scalar program on plain floats (no lowering for erf)"


def test_fuse_false_keeps_the_plain_float_program():
    prog = dk.jit(lambda x: dk.grad(loop)(x), fuse=False).program(0.3)
    assert prog.vm is None and prog.fusion == "" and "math.sin" in prog.source


def test_the_tape_lists_its_constants_and_rows():
    g = trace_graph(lambda x: dnp.sin(x) * 2.0 + x ** 2, (0.5,))
    assert scalar_vm.encode(g).listing().splitlines() == [
        "r1 = 2.0", "r2 = sin(r0)", "r3 = mul(r2, r1)", "r4 = mul(r0, r0)",
        "r5 = add(r3, r4)", "return r5"]  # x ** 2 is numpy's square


def test_without_numba_a_scalar_program_says_so_and_runs_on_plain_floats(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` now fails
    monkeypatch.setattr(numba_kernels, "_said_missing", False)
    monkeypatch.setattr(scalar_vm, "_compiled", [])
    f = dk.jit(lambda x: dk.grad(loop)(x), fuse=True)
    with pytest.warns(RuntimeWarning, match=r"pip install diffkit\[jit\]"):
        prog = f.program(0.3)
    assert prog.vm is None and prog.fusion == "scalar program on plain floats (numba missing)"
    x, dx = 0.3, 1.0
    for _ in range(500):
        x, dx = 0.9 * math.sin(x) + 0.1 * x, (0.9 * math.cos(x) + 0.1) * dx
    assert_close(f(0.3), dx, rtol=1e-12)


@pytest.mark.jit
def test_show_code_says_a_scalar_program_runs_on_the_tape_vm(capsys):
    from diffkit_cli.main import main

    try:
        main(["show", "--code", "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2,x2=5"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    assert "fused (dk.jit(f, fuse=True)): scalar program: 10 instructions on the tape VM" in out
