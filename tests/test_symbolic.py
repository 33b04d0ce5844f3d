"""The symbolic backend: closed forms, the table's sympy translations, swell figures."""

import numpy as np
import pytest
import sympy as sp

import diffkit as dk
import diffkit.numpy as dnp
from diffkit import primitives
from diffkit.core import new_level
from diffkit.interpreters.symbolic import (Sym, SymbolicInterpreter, dag_size, closed_form, lambdify_modules,
                                      to_sympy, tree_size)

SYM = "symbolic"
x_, y_ = sp.symbols("x y", real=True)

# Points inside each elementwise primitive's domain: (args, params)
ELEMENTWISE = {
    "exp": ([0.3],), "log": ([1.7],), "log1p": ([0.4],), "sqrt": ([2.5],), "sin": ([0.7],),
    "cos": ([0.7],), "tan": ([0.4],), "arcsin": ([0.3],), "arccos": ([0.3],), "arctan": ([1.3],),
    "sinh": ([0.6],), "cosh": ([0.6],), "tanh": ([0.6],), "sigmoid": ([-0.8],), "abs": ([-1.3],),
    "sign": ([-1.3],), "neg": ([0.4],), "add": ([0.4, 1.1],), "sub": ([0.4, 1.1],),
    "mul": ([0.4, 1.1],), "div": ([0.4, 1.1],), "power": ([1.4, 0.7],),
    "maximum": ([0.4, 1.1],), "minimum": ([0.4, 1.1],),
    "cbrt": ([1.7],), "exp2": ([0.3],), "expm1": ([0.3],), "arcsinh": ([0.6],),
    "arccosh": ([1.6],), "arctanh": ([0.4],), "sinc": ([0.7],), "floor": ([1.3],),
    "ceil": ([1.3],), "mod": ([2.5, 0.7],), "fmod": ([-2.5, 0.7],), "arctan2": ([0.4, 1.1],),
    "hypot": ([0.4, 1.1],), "logaddexp": ([0.4, 1.1],), "logaddexp2": ([0.4, 1.1],),
    "gammaln": ([1.7],), "polygamma": ([1.7], {"n": 1}), "erf": ([0.4],), "erfc": ([0.4],),
    "logit": ([0.3],), "log_ndtr": ([0.4],), "xlogy": ([0.4, 1.1],),
    "gamma": ([1.7],), "rgamma": ([1.7],), "erfinv": ([0.3],), "erfcinv": ([0.6],),
    "erfcx": ([0.4],), "ndtri": ([0.3],), "beta": ([0.4, 1.1],), "betaln": ([0.4, 1.1],),
    "xlog1py": ([0.4, 1.1],), "entr": ([0.4],), "gamma_density": ([2.5, 1.3], {"k": 1}),
    "sinc_derivative": ([1.2], {"n": 2}),
    "real": ([0.3],), "imag": ([0.3],), "conj": ([0.3],),  # (of real values: the symbols are real)
}


# rules whose exact equality sympy cannot decide (float constants such as 2 / sqrt(pi),
# identities needing sign assumptions): checked at points instead
NUMERIC_ONLY = {"cbrt", "exp2", "logaddexp2", "arccosh", "sinc", "sinc_derivative", "fmod", "erf", "erfc", "log_ndtr", "sigmoid",
                "erfinv", "erfcinv", "erfcx", "ndtri"}


def elementwise_prims():
    return [p for p in primitives.table().values() if p.broadcasts and p.sympy is not None
            and p.name not in ("where", "solve")  # (solve: matrices, see test_linalg_closed_forms)
            and not getattr(p.sympy, "no_closed_form", False)]


def test_every_elementwise_primitive_has_a_case():
    assert {p.name for p in elementwise_prims()} <= set(ELEMENTWISE)


@pytest.mark.parametrize("prim", elementwise_prims(), ids=lambda p: p.name)
def test_numpy_and_lambdified_sympy_agree(prim):
    args, params = (ELEMENTWISE[prim.name] + ({},))[:2]
    syms = [x_, y_][: len(args)]
    expr = prim.sympy(sp, *syms, **params)
    lam = sp.lambdify(syms, expr, modules=lambdify_modules())
    rel = 1e-15 if prim.name == "fmod" else 4e-16  # (fmod as x - y trunc(x / y): a rounding more)
    assert lam(*args) == pytest.approx(prim.impl(*args, **params), rel=rel, abs=1e-300)


@pytest.mark.parametrize("prim", [p for p in elementwise_prims()
                                  if p.name not in ("maximum", "minimum")], ids=lambda p: p.name)
def test_symbolic_jvp_rule_equals_sympy_diff(prim):
    """Each JVP rule, run on symbols, is exactly sympy's derivative of the translation.

    (maximum/minimum choose a side by comparing numbers, so their rules are checked
    numerically, against finite differences, in test_primitives.)"""
    args, params = (ELEMENTWISE[prim.name] + ({},))[:2]
    syms = [x_, y_][: len(args)]
    point = dict(zip(syms, args))
    with new_level(SymbolicInterpreter) as t:
        boxed = [Sym(t, s) for s in syms]
        y = prim(*boxed, **params)
        for i, s in enumerate(syms):
            t_dot = sp.Symbol("t", real=True)
            rule = prim.jvp[i](Sym(t, t_dot), y, *boxed, **params)
            got = sp.sympify(rule.value if isinstance(rule, Sym) else rule)
            want = sp.diff(prim.sympy(sp, *syms, **params), s) * t_dot
            want = want.replace(sp.DiracDelta, lambda *a: sp.S.Zero)
            if prim.name in NUMERIC_ONLY:  # equal at two points, to rounding
                for at in (point, {s: 1.01 * v for s, v in point.items()}):
                    assert float(got.subs(at).subs(t_dot, 1.3)) == pytest.approx(
                        float(want.subs(at).subs(t_dot, 1.3).evalf()), rel=1e-13)
                continue
            assert sp.simplify(sp.nsimplify(got) - want) == 0  # rules write 1.0 where sympy has 1
            assert float(got.subs(point).subs(t_dot, 1.3)) == pytest.approx(
                float(want.subs(point).subs(t_dot, 1.3)), rel=1e-14, abs=1e-300)


def test_closed_forms_scalar_and_vector():
    f = lambda x: dnp.sin(x) * dnp.exp(x)  # noqa: E731
    d = closed_form(f, 0.0, kind="derivative")
    assert sp.simplify(d.expression - (sp.exp(x_) * (sp.sin(x_) + sp.cos(x_)))) == 0
    pts = np.linspace(-2, 2, 7)
    np.testing.assert_allclose(dk.derivative(f, backend=SYM)(pts),
                               np.exp(pts) * (np.sin(pts) + np.cos(pts)), rtol=1e-15)
    g = lambda v: v[0] ** 2 * v[1] + dnp.log(v[1])  # noqa: E731
    v = np.array([1.5, 2.5])
    np.testing.assert_allclose(dk.grad(g, backend=SYM)(v), [2 * 1.5 * 2.5, 1.5**2 + 1 / 2.5],
                               rtol=1e-15)
    np.testing.assert_allclose(dk.hessian(g, backend=SYM)(v),
                               [[2 * 2.5, 2 * 1.5], [2 * 1.5, -1 / 2.5**2]], rtol=1e-15)
    A = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]])
    jac = dk.jacobian(lambda v: dnp.tanh(A @ v), backend=SYM)(v)
    np.testing.assert_allclose(jac, (1 - np.tanh(A @ v) ** 2)[:, None] * A, rtol=1e-14)


def test_lambdified_values_match_exact_values_to_an_ulp():
    f = lambda x: dnp.sin(x) ** 2 + dnp.sqrt(x) * dnp.log1p(x)  # noqa: E731
    d = closed_form(f, 0.0, kind="derivative")
    pts = np.array([0.1, 0.7, 1.9, 3.3])
    got = d(pts)[1]
    exact = [float(d.expression.subs(x_, sp.Float(float(p), 40)).evalf(40)) for p in pts]
    np.testing.assert_allclose(got, exact, rtol=3e-16)


def test_cse_shrinks_the_logistic_map_derivative():
    def logistic(x, depth=6):
        for _ in range(depth):
            x = 4.0 * x * (1.0 - x)
        return x

    d = closed_form(logistic, 0.3, kind="derivative")
    assert d.sizes["expr_dag_nodes"] * 5 < d.sizes["expr_nodes"]
    assert d.sizes["expr_nodes"] > d.sizes["f_expr_nodes"]
    chain = 1.0
    x = 0.3
    for _ in range(6):
        chain *= 4 - 8 * x
        x = 4 * x * (1 - x)
    assert d(0.3)[1] == pytest.approx(chain, rel=1e-13)
    replacements, reduced = d.common_subexpressions()
    assert replacements and len(reduced) == 1
    assert "\\" in d.latex() or "x" in d.latex()


def test_tree_and_dag_sizes_count_repeats():
    e = (x_ + 1) * (x_ + 1) + sp.sin(x_ + 1)
    assert tree_size(e) > dag_size(e)
    assert tree_size(x_) == 1


def test_control_flow_gets_one_clear_error():
    def branchy(x):
        return x if x > 0 else -x

    with pytest.raises(dk.DiffkitError, match="needs a closed form.*dnp.where"):
        dk.grad(branchy, backend=SYM)(1.0)
    # the closed-form way to branch works, with the right derivative on each side
    closed = lambda x: dnp.where(x > 0, x ** 2, -x)  # noqa: E731
    np.testing.assert_allclose(dk.derivative(closed, backend=SYM)(np.array([-2.0, 3.0])),
                               [-1.0, 6.0])


def test_non_smooth_primitives_follow_the_conventions():
    f = lambda v: dnp.sum(dnp.abs(v)) + dnp.max(v) + dnp.sum(dnp.maximum(v, 0.5))  # noqa: E731
    v = np.array([-1.5, 2.0, 0.25])
    np.testing.assert_allclose(dk.grad(f, backend=SYM)(v), dk.grad(f)(v))
    np.testing.assert_allclose(dk.grad(f, backend=SYM)(v), [-1.0, 3.0, 1.0])


def test_setup_is_cached_per_function_and_shape():
    backend = dk.backend(SYM)
    f = lambda v: dnp.sum(v ** 3)  # noqa: E731
    g = dk.grad(f, backend=backend)
    g(np.ones(3))
    first = backend.last
    g(np.full(3, 2.0))
    assert backend.last is first
    np.testing.assert_allclose(g(np.full(3, 2.0)), np.full(3, 12.0))
    g(np.ones(4))
    assert backend.last is not first


def test_options_and_traced_shapes():
    simplified = dk.backend(SYM, simplify=True, cse=False)
    f = lambda x: dnp.sin(x) ** 2 + dnp.cos(x) ** 2  # noqa: E731
    assert dk.derivative(f, backend=simplified)(0.7) == 0.0
    syms, out = to_sympy(lambda v: v * 2.0, np.zeros((2, 2)))
    assert len(syms) == 4 and np.shape(out) == (2, 2)
    with pytest.raises(dk.DiffkitError, match="no option 'simplfy'"):
        dk.backend(SYM, simplfy=True)
