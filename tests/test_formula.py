"""Tests for diffkit.bench.formula: values, refusals, safety, and property-based checks."""
from __future__ import annotations

import builtins
import importlib
import math
import sys
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diffkit.bench.formula import DEFAULT_FUNCTIONS, Formula, FormulaError, parse_formula


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


NP = {name: getattr(np, name) for name in DEFAULT_FUNCTIONS if name != "sigmoid"}
NP["sigmoid"] = _sigmoid

X = np.array([0.5, 1.0, 2.0, 3.5])
Y = np.array([0.25, -1.0, 4.0, 7.0])


# ---------------------------------------------------------------- values

@pytest.mark.parametrize("text, variables, direct", [
    ("log(x1) + x1*x2 - sin(x2)", ("x1", "x2"), lambda a, b: np.log(a) + a * b - np.sin(b)),
    ("x^2 + 3*x - 1", ("x",), lambda x: x**2 + 3 * x - 1),
    ("-x**-2", ("x",), lambda x: -(x ** -2.0)),
    ("-x^2", ("x",), lambda x: -(x**2)),
    ("sqrt(x)/(1+exp(-y))", ("x", "y"), lambda x, y: np.sqrt(x) / (1 + np.exp(-y))),
    ("maximum(x, 0)", ("x",), lambda x: np.maximum(x, 0)),
    ("minimum(x, y) + abs(y) * sign(y)", ("x", "y"), lambda x, y: np.minimum(x, y) + np.abs(y) * np.sign(y)),
    ("asin(x/4) + acos(x/4) + atan(y) + ln(x)", ("x", "y"),
     lambda x, y: np.arcsin(x / 4) + np.arccos(x / 4) + np.arctan(y) + np.log(x)),
    ("sigmoid(x) * tanh(y) + log1p(x) - cosh(y/8) + sinh(x) / cos(y) * tan(x/8)", ("x", "y"),
     lambda x, y: _sigmoid(x) * np.tanh(y) + np.log1p(x) - np.cosh(y / 8) + np.sinh(x) / np.cos(y) * np.tan(x / 8)),
    ("sum(x*y) + prod(x) / mean(y)", ("x", "y"), lambda x, y: np.sum(x * y) + np.prod(x) / np.mean(y)),
    ("1e-3 * x + 2.5E2 + +y", ("x", "y"), lambda x, y: 1e-3 * x + 2.5e2 + y),
    ("x / y / 2 - y - x", ("x", "y"), lambda x, y: x / y / 2 - y - x),
    ("2^3^2 * x", ("x",), lambda x: 512 * x),  # right-associative, like **
    ("  (x\n + y)\t", ("x", "y"), lambda x, y: x + y),  # any whitespace is fine
])
def test_values_match_numpy(text, variables, direct):
    formula = parse_formula(text, NP)
    assert formula.variables == variables
    args = (X, Y)[: len(variables)]
    np.testing.assert_allclose(formula(*args), direct(*args), rtol=1e-13)


def test_constants():
    formula = parse_formula("2*pi*e", NP)
    assert formula.variables == ()
    assert formula() == pytest.approx(2 * math.pi * math.e)
    assert parse_formula("e^x + pi", NP)(1.0) == pytest.approx(math.e + math.pi)


def test_variables_sorted_naturally():
    assert parse_formula("x10 + x2 + x1", NP).variables == ("x1", "x2", "x10")
    assert parse_formula("y + x", NP).variables == ("x", "y")
    assert parse_formula("b2a + b10 + a_1 + A", NP).variables == ("A", "a_1", "b2a", "b10")
    assert parse_formula("x + x*x", NP).variables == ("x",)


def test_integer_powers_stay_exact_and_huge_ones_overflow_fast():
    assert parse_formula("2^10", NP)() == 1024
    assert parse_formula("9^9^9^9", NP)() == float("inf")  # fast, as a float: no bignum
    assert parse_formula("10^400 * 0 + 1", NP)() != 1  # inf * 0 is nan: floats, not bignums


def test_wrong_argument_count_names_variables():
    formula = parse_formula("x + y", NP)
    with pytest.raises(TypeError, match=r"\('x', 'y'\).*got 1"):
        formula(1.0)


def test_repr_and_equality():
    formula = parse_formula("y*x", NP)
    assert repr(formula) == "Formula('y*x', variables=('x', 'y'))"
    assert formula == parse_formula("y*x", {"sin": np.sin})
    assert isinstance(formula, Formula)
    with pytest.raises(AttributeError):
        formula.text = "x"  # frozen


def test_values_may_be_any_objects_with_operators():
    class Dual:  # forward-mode style box: value + derivative
        def __init__(self, v, d):
            self.v, self.d = v, d

        def __add__(self, o):
            o = o if isinstance(o, Dual) else Dual(o, 0.0)
            return Dual(self.v + o.v, self.d + o.d)

        __radd__ = __add__

        def __mul__(self, o):
            o = o if isinstance(o, Dual) else Dual(o, 0.0)
            return Dual(self.v * o.v, self.d * o.v + self.v * o.d)

        __rmul__ = __mul__

        def __neg__(self):
            return Dual(-self.v, -self.d)

    def dsin(u):
        return Dual(math.sin(u.v), math.cos(u.v) * u.d)

    result = parse_formula("3*x*x + sin(x) + -x", {"sin": dsin})(Dual(2.0, 1.0))
    assert result.v == pytest.approx(12 + math.sin(2) - 2)
    assert result.d == pytest.approx(12 + math.cos(2) - 1)


def test_custom_functions_and_unchecked_arity():
    formula = parse_formula("hypot3(x, y, 1) + sin(x)", {"hypot3": lambda a, b, c: (a * a + b * b + c * c) ** 0.5,
                                                          "sin": np.sin})
    assert formula(3.0, 4.0) == pytest.approx(26 ** 0.5 + np.sin(3.0))
    with pytest.raises(FormulaError, match="unknown function 'cos'"):
        parse_formula("cos(x)", {"sin": np.sin})
    with pytest.raises(FormulaError, match="unknown function 'ln'"):  # alias only if its target exists
        parse_formula("ln(x)", {"sin": np.sin})


# ---------------------------------------------------------------- default namespace

def test_default_namespace_is_looked_up_at_call_time(monkeypatch):
    formula = parse_formula("sin(x) + ln(x) + maximum(x, 1)")  # parsing needs no diffkit.numpy
    calls = []
    fake = types.ModuleType("diffkit.numpy")
    for name in ("sin", "log", "maximum"):
        def spy(*args, _name=name):
            calls.append(_name)
            return getattr(np, _name)(*args)
        setattr(fake, name, spy)
    monkeypatch.setitem(sys.modules, "diffkit.numpy", fake)
    assert formula(2.0) == pytest.approx(np.sin(2.0) + np.log(2.0) + 2.0)
    assert sorted(calls) == ["log", "maximum", "sin"]


def test_default_namespace_with_real_diffkit_numpy():
    try:
        dnp = importlib.import_module("diffkit.numpy")
    except ImportError:
        pytest.skip("diffkit.numpy is not available yet")
    formula = parse_formula("log(x1) + x1*x2 - sin(x2) + sqrt(x1)")
    np.testing.assert_allclose(np.asarray(formula(X, Y)), np.log(X) + X * Y - np.sin(Y) + np.sqrt(X), rtol=1e-12)
    for name in DEFAULT_FUNCTIONS:
        assert callable(getattr(dnp, name)), name


# ---------------------------------------------------------------- refusals

@pytest.mark.parametrize("text, fragments, column", [
    ("__import__('os').system('echo hacked')", ["only named functions", "__import__"], 1),
    ("x.__class__", ["attribute access 'x.__class__' is not allowed", "exp, log"], 1),
    ("1 + x.__class__", ["attribute access 'x.__class__'"], 5),
    ("x^2 + y.z", ["attribute access 'y.z'"], 7),  # column in the user's text, despite ^ -> **
    ("().__class__.__bases__", ["attribute access"], 1),
    ("lambda: 1", ["lambda 'lambda: 1'"], 1),
    ("[x for x in y]", ["comprehension"], 1),
    ("x[0]", ["indexing 'x[0]'"], 1),
    ('"abc"', ["string '\"abc\"'"], 1),
    ("b'abc'", ["bytes"], 1),
    ("open('f')", ["unknown function 'open'; known: exp, log, log1p, sqrt", "asin, acos, atan, ln"], 1),
    ("x + foo(1)", ["unknown function 'foo'"], 5),
    ("f(x)(y)", ["only named functions can be called", "'f(x)(y)'"], 1),
    ("sin(x, y)", ["function 'sin' takes 1 argument(s), got 2"], 1),
    ("2 * maximum(x)", ["function 'maximum' takes 2 argument(s), got 1"], 5),
    ("_x + 1", ["name '_x' is not allowed"], 1),
    ("sin(x=1)", ["keyword argument 'x=1'"], 5),
    ("sin(*x)", ["starred argument '*x'"], 5),
    ("1 if x else 2", ["conditional expression"], 1),
    ("x < 1", ["comparison 'x < 1'"], 1),
    ("x and y", ["boolean operator"], 1),
    ("not x", ["operator 'not'"], 1),
    ("x % 2", ["operator '%'"], 1),
    ("x // 2", ["operator '//'"], 1),
    ("(y := 2)", ["assignment expression"], 2),
    ("f'{x}'", ["f-string"], 1),
    ("x, y", ["tuple"], 1),
    ("{x: 1}", ["dict"], 1),
    ("True + x", ["constant 'True'"], 1),
    ("None", ["constant 'None'"], 1),
    ("2j * x", ["complex number '2j'"], 1),
    ("sin + 1", ["function 'sin' must be called"], 1),
    ("x +* 2", ["invalid syntax"], 4),
    ("(x + 1", ["invalid syntax", "never closed"], 1),
    ("x θ", ["unexpected character 'θ'"], 3),
    ("x\x00", ["unexpected character"], 2),
])
def test_refusals(text, fragments, column):
    with pytest.raises(FormulaError) as info:
        parse_formula(text, NP)
    message = str(info.value)
    assert message.startswith(f"formula error at column {column}: "), message
    assert info.value.column == column
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert "\n" not in message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("   \t\n", "empty"),
    ("x+" * 10_000, "limit is 10000"),
    ("(" * 500 + "x" + ")" * 500, "nested more than 100 levels"),
    ("-" * 9_000 + "x", "nested more than 100 levels"),  # would be a MemoryError in CPython's parser
    ("1+" * 4_000 + "1", "nested more than 100 levels"),  # would be a RecursionError
    ("x" + "**x" * 150, "nested more than 100 levels"),
    ("sin(" * 101 + "x" + ")" * 101, "nested more than 100 levels"),
])
def test_size_and_depth_limits(text, fragment):
    with pytest.raises(FormulaError, match=fragment) as info:
        parse_formula(text, NP)
    assert "\n" not in str(info.value)


def test_moderate_nesting_is_fine():
    assert parse_formula("(" * 60 + "x" + ")" * 60, NP)(2.0) == 2.0
    assert parse_formula("sin(" * 40 + "x" + ")" * 40, NP)(0.0) == 0.0


def test_not_a_string():
    with pytest.raises(FormulaError, match="must be a string"):
        parse_formula(b"x", NP)  # type: ignore[arg-type]


# ---------------------------------------------------------------- safety: nothing runs

def test_nothing_is_executed(tmp_path, monkeypatch):
    target = tmp_path / "pwned"
    ran = []
    monkeypatch.setattr(builtins, "pwn", lambda: ran.append(1), raising=False)
    attacks = [
        f"open({str(target)!r}, 'w')",
        f"__import__('pathlib').Path({str(target)!r}).touch()",
        f"[open({str(target)!r}, 'w') for _ in x]",
        f"(lambda: open({str(target)!r}, 'w'))()",
        "pwn()", "x.pwn()", "exec('pwn()')", "eval('pwn()')", "globals()['pwn']()",
        "sin.__globals__", "sin.__self__.sin(x)", "breakpoint()", "exit()",
    ]
    # eval/exec must never run; compile is only allowed to build an AST (that is what ast.parse does).
    real_compile = builtins.compile

    def guarded_compile(source, filename, mode, flags=0, *args, **kwargs):
        assert flags & __import__("ast").PyCF_ONLY_AST, "compiled user text into code"
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec called")

    monkeypatch.setattr(builtins, "compile", guarded_compile)
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    for text in attacks:
        with pytest.raises(FormulaError):
            parse_formula(text, NP)
        with pytest.raises(FormulaError):
            parse_formula(text)
    assert parse_formula("sin(x) + x^2", NP)(1.0) == pytest.approx(math.sin(1.0) + 1.0)
    assert parse_formula("pwn", NP)(7.0) == 7.0  # a bare name is just a variable, never a global lookup
    assert not target.exists()
    assert ran == []


def test_only_namespace_callables_are_invoked():
    calls = []

    def spy(name):
        def wrapped(*args):
            calls.append(name)
            return getattr(np, name)(*args)
        return wrapped

    functions = {name: spy(name) for name in ("exp", "sin", "maximum")}
    formula = parse_formula("exp(sin(x)) + maximum(x, y)", functions)
    formula(X, Y)
    assert calls == ["sin", "exp", "maximum"]


# ---------------------------------------------------------------- properties

TEXT_EXAMPLES = 600
FORMULA_CHARS_EXAMPLES = 600
TREE_EXAMPLES = 400


def _parse_or_refuse(text: str) -> None:
    try:
        result = parse_formula(text, NP)
    except FormulaError as error:
        assert "\n" not in str(error)
        assert str(error).startswith("formula error")
    else:
        assert isinstance(result, Formula)


@settings(max_examples=TEXT_EXAMPLES, deadline=None)
@given(st.text(max_size=200))
def test_random_text_parses_or_is_refused(text):
    _parse_or_refuse(text)


@settings(max_examples=FORMULA_CHARS_EXAMPLES, deadline=None)
@given(st.lists(st.sampled_from(list("xyz019.e_+-*/^()[]{},:;'\"=<>!%&|~@#\\ \n") + [
    "sin", "log", "maximum", "lambda", " if ", " for ", " in ", " and ", "__class__", "**", "1e-3"]),
    max_size=40).map("".join))
def test_formula_like_text_parses_or_is_refused(text):
    _parse_or_refuse(text)


UNARY = ["exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
         "tanh", "sigmoid", "abs", "sign", "asin", "acos", "atan", "ln"]
ALIAS_TARGET = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "ln": "log"}
PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "pos": 3, "**": 4}
ATOM = 5

leaves = st.one_of(
    st.sampled_from([("var", "x"), ("var", "y"), ("var", "z2"), ("const", "pi"), ("const", "e")]),
    st.one_of(st.sampled_from([0.5, 1.0, 2.0, 3.0, 1e-3, 1e3]), st.floats(0, 10, allow_nan=False))
    .map(lambda v: ("num", v)),
)
trees = st.recursive(leaves, lambda sub: st.one_of(
    st.tuples(st.sampled_from(["neg", "pos"]), sub),
    st.tuples(st.just("bin"), st.sampled_from(["+", "-", "*", "/", "**"]), sub, sub),
    st.tuples(st.just("call"), st.sampled_from(UNARY), sub),
    st.tuples(st.just("call2"), st.sampled_from(["maximum", "minimum"]), sub, sub),
), max_leaves=16)


def _prec(tree) -> int:
    if tree[0] in ("neg", "pos"):
        return PREC[tree[0]]
    return PREC[tree[1]] if tree[0] == "bin" else ATOM


def _render(tree, draw) -> tuple[str, int]:
    """Text for ``tree`` with minimal parentheses (plus random extra ones), and its precedence."""
    def wrap(sub, needed: bool) -> str:
        text, _ = _render(sub, draw)
        return f"({text})" if needed or draw(st.booleans()) else text

    kind = tree[0]
    if kind in ("var", "const"):
        return tree[1], ATOM
    if kind == "num":
        return repr(tree[1]), ATOM
    if kind in ("neg", "pos"):
        sign = "-" if kind == "neg" else "+"
        return sign + wrap(tree[1], _prec(tree[1]) < PREC[kind]), PREC[kind]
    if kind == "bin":
        _, op, left, right = tree
        p = PREC[op]
        lp, rp = _prec(left), _prec(right)
        if op == "**":  # right-associative; the exponent may be a bare unary (x**-y)
            spelled = draw(st.sampled_from(["**", "^", " ^ ", " ** "]))
            return wrap(left, lp <= p) + spelled + wrap(right, rp < PREC["neg"]), p
        return wrap(left, lp < p) + f" {op} " + wrap(right, rp <= p), p
    args = ", ".join(_render(arg, draw)[0] for arg in tree[2:])
    return f"{tree[1]}({args})", ATOM


def _direct(tree, env):
    """The same math written directly with numpy functions and Python operators."""
    kind = tree[0]
    if kind == "var":
        return env[tree[1]]
    if kind == "const":
        return {"pi": np.pi, "e": np.e}[tree[1]]
    if kind == "num":
        return tree[1]
    if kind == "neg":
        return -_direct(tree[1], env)
    if kind == "pos":
        return _direct(tree[1], env)
    if kind == "bin":
        a, b = _direct(tree[2], env), _direct(tree[3], env)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                "**": lambda: a**b}[tree[1]]()
    function = NP[ALIAS_TARGET.get(tree[1], tree[1])]
    return function(*(_direct(arg, env) for arg in tree[2:]))


values = st.lists(st.floats(-3, 3, allow_nan=False), min_size=3, max_size=3).map(np.array)


@settings(max_examples=TREE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, st.data(), values, values, values)
def test_random_expression_trees_match_numpy(tree, data, x, y, z2):
    text, _ = _render(tree, data.draw)
    formula = parse_formula(text, NP)
    env = {"x": x, "y": y, "z2": z2}
    assert set(formula.variables) <= set(env)
    with np.errstate(all="ignore"):
        try:
            want = _direct(tree, env)
        except ArithmeticError as error:  # e.g. 0.0 ** -1.0 on Python floats: the formula must agree
            with pytest.raises(type(error)):
                formula(*(env[name] for name in formula.variables))
            return
        got = formula(*(env[name] for name in formula.variables))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
