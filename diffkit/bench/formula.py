"""Safe parsing of user-typed formulas such as ``"log(x1) + x1*x2 - sin(x2)"``.

The text is parsed with :mod:`ast` and checked against a small whitelist
(numbers, variable names, ``+ - * / ** ^``, parentheses, calls to known
functions).  Nothing in the text is ever executed, compiled into code or looked
up by attribute: a :class:`Formula` is evaluated by walking the checked tree, and the
only callables it invokes are those of its function namespace.
"""
from __future__ import annotations

import ast
import inspect
import importlib
import math
import operator
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import numpy as np

__all__ = ["Formula", "FormulaError", "parse_formula", "DEFAULT_FUNCTIONS", "ALIASES", "CONSTANTS"]

MAX_LENGTH = 10_000
MAX_DEPTH = 100
DEFAULT_FUNCTIONS = ("exp log log1p sqrt sin cos tan arcsin arccos arctan sinh cosh tanh "
                     "sigmoid abs sign maximum minimum sum prod mean").split()
ALIASES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "ln": "log"}
CONSTANTS = {"pi": math.pi, "e": math.e}
ARITY = {**dict.fromkeys(DEFAULT_FUNCTIONS, 1), "maximum": 2, "minimum": 2}


def _number(v: Any) -> Any:
    """Integers stay exact while a float holds them exactly; beyond, they become floats
    (inf past the float range), so numpy functions can take them."""
    if type(v) is int and abs(v) > 2**53:
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    return v


def _power(a: Any, b: Any) -> Any:
    """``a ** b``; huge integer powers (``9**9**9``) go through numpy floats (inf, fast)."""
    if type(a) is int and type(b) is int and abs(a) > 1 and a.bit_length() * abs(b) > 64:
        with np.errstate(over="ignore"):
            return float(np.float64(a) ** b)
    return _number(a ** b)


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: _power}
_SYMBOLS = {ast.Mod: "%", ast.FloorDiv: "//", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
            ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^", ast.Invert: "~", ast.Not: "not"}
_REFUSED = {ast.Attribute: "attribute access", ast.Subscript: "indexing", ast.Lambda: "lambda",
            **dict.fromkeys((ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp), "comprehension"),
            ast.Compare: "comparison", ast.BoolOp: "boolean operator", ast.IfExp: "conditional expression",
            ast.NamedExpr: "assignment expression", ast.JoinedStr: "f-string", ast.List: "list",
            ast.Tuple: "tuple", ast.Set: "set", ast.Dict: "dict", ast.Starred: "starred expression"}


class FormulaError(ValueError):
    """A formula was refused; the message is one line naming the column (1-based)."""

    def __init__(self, reason: str, column: int | None = None) -> None:
        self.reason, self.column = reason, column
        where = f" at column {column}" if column is not None else ""
        super().__init__(f"formula error{where}: {reason}")


class _DefaultFunctions(Mapping[str, Callable[..., Any]]):
    """The standard names, fetched from ``diffkit.numpy`` only when a formula is evaluated."""

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in ARITY:
            raise KeyError(name)
        return getattr(importlib.import_module("diffkit.numpy"), name)

    def __contains__(self, name: object) -> bool:  # no import needed to know the names
        return name in ARITY

    def __iter__(self) -> Iterator[str]:
        return iter(DEFAULT_FUNCTIONS)

    def __len__(self) -> int:
        return len(DEFAULT_FUNCTIONS)


def _natural_key(name: str) -> tuple[list[Any], str]:
    """Sort key putting ``x2`` before ``x10``."""
    parts = re.split(r"(\d+)", name)
    return [int(p) if i % 2 else p for i, p in enumerate(parts)], name


def _resolve(name: str, functions: Mapping[str, Callable[..., Any]]) -> str | None:
    """The key of ``functions`` a call to ``name`` uses (aliases included), or None."""
    if name in functions:
        return name
    return ALIASES[name] if ALIASES.get(name) in functions else None


@dataclass(frozen=True)
class Formula:
    """A checked formula; call it with one value per name in ``variables``."""

    text: str
    variables: tuple[str, ...]
    _tree: ast.expr = field(repr=False, compare=False)
    _functions: Mapping[str, Callable[..., Any]] = field(repr=False, compare=False)

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.variables):
            raise TypeError(f"formula {self.text!r} takes {len(self.variables)} argument(s) "
                            f"{self.variables}, got {len(args)}")
        return self._eval(self._tree, dict(zip(self.variables, args)))

    def __repr__(self) -> str:
        return f"Formula({self.text!r}, variables={self.variables!r})"

    @property
    def __signature__(self) -> inspect.Signature:
        """One positional parameter per variable: tools that name inputs see x1, x2."""
        return inspect.Signature([inspect.Parameter(v, inspect.Parameter.POSITIONAL_ONLY)
                                  for v in self.variables])

    def _eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return _number(node.value)
        if isinstance(node, ast.Name):
            return CONSTANTS[node.id] if node.id in CONSTANTS else env[node.id]
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, env)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            op = _BINOPS[type(node.op)]
            return op(self._eval(node.left, env), self._eval(node.right, env))
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        function = self._functions[_resolve(node.func.id, self._functions) or node.func.id]
        return function(*(self._eval(arg, env) for arg in node.args))


class _Checker:
    """Validates a parsed tree; reports positions in the user's original text."""

    def __init__(self, text: str, positions: list[int], functions: Mapping[str, Callable[..., Any]]):
        self.text, self.positions, self.functions = text, positions, functions
        self.variables: set[str] = set()
        self.known = ", ".join([*functions, *(a for a in ALIASES if a not in functions and _resolve(a, functions))])

    def fail(self, node: ast.AST, reason: str) -> FormulaError:
        start = self.positions[node.col_offset]  # type: ignore[attr-defined]
        end = self.positions[node.end_col_offset or node.col_offset]  # type: ignore[attr-defined]
        piece = re.sub(r"\s", " ", self.text[start:end])
        piece = piece if len(piece) <= 40 else piece[:37] + "..."
        return FormulaError(reason.replace("{piece}", f"'{piece}'"), start + 1)

    def refuse(self, node: ast.AST, what: str) -> FormulaError:
        return self.fail(node, f"{what} {{piece}} is not allowed; use numbers, variables, "
                               f"+ - * / ** ^, parentheses and the functions: {self.known}")

    def check(self, node: ast.AST, depth: int = 1) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(node, f"formula is nested more than {MAX_DEPTH} levels deep near {{piece}}")
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float):
                kind = {str: "string", bytes: "bytes", complex: "complex number"}.get(type(node.value))
                raise self.refuse(node, kind or "constant")
        elif isinstance(node, ast.Name):
            self.check_name(node)
            if _resolve(node.id, self.functions):
                raise self.fail(node, f"function {{piece}} must be called, e.g. {node.id}(x)")
            if node.id not in CONSTANTS:
                self.variables.add(node.id)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            self.check(node.operand, depth + 1)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            self.check(node.left, depth + 1)
            self.check(node.right, depth + 1)
        elif isinstance(node, (ast.UnaryOp, ast.BinOp)):
            raise self.fail(node, f"operator '{_SYMBOLS.get(type(node.op), '?')}' in {{piece}} is not allowed")
        elif isinstance(node, ast.Call):
            self.check_call(node, depth)
        else:
            raise self.refuse(node, _REFUSED.get(type(node), type(node).__name__))

    def check_name(self, node: ast.Name) -> None:
        if not _NAME.match(node.id):
            raise self.fail(node, "name {piece} is not allowed (names must not start with '_')")

    def check_call(self, node: ast.Call, depth: int) -> None:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, "only named functions can be called, not {piece}")
        self.check_name(node.func)
        key = _resolve(node.func.id, self.functions)
        if key is None:
            raise self.fail(node.func, f"unknown function {{piece}}; known: {self.known}")
        if node.keywords:
            raise self.fail(node.keywords[0], "keyword argument {piece} is not allowed")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.fail(arg, "starred argument {piece} is not allowed")
            self.check(arg, depth + 1)
        arity = ARITY.get(key)
        if arity is not None and len(node.args) != arity:
            raise self.fail(node, f"function '{node.func.id}' takes {arity} argument(s), "
                                  f"got {len(node.args)} in {{piece}}")


def parse_formula(text: str, functions: Mapping[str, Callable[..., Any]] | None = None) -> Formula:
    """Parse ``text`` into a :class:`Formula`, refusing anything outside the whitelist.

    ``functions`` maps the callable names to callables; by default the standard names
    (``exp``, ``log``, ``sin``, ``maximum``, ...) are taken from ``diffkit.numpy`` when
    the formula is evaluated.  ``^`` means power, ``pi`` and ``e`` are constants.

    >>> import numpy as np
    >>> f = parse_formula("x2^2 + ln(x10)", {"log": np.log})
    >>> f.variables
    ('x2', 'x10')
    >>> float(f(3.0, 1.0))
    9.0
    """
    if not isinstance(text, str):
        raise FormulaError(f"a formula must be a string, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"formula has {len(text)} characters; the limit is {MAX_LENGTH}")
    if not text.strip():
        raise FormulaError("the formula is empty")
    namespace: Mapping[str, Callable[..., Any]] = _DefaultFunctions() if functions is None else dict(functions)
    depth = 0
    for column, char in enumerate(text, 1):
        if not (" " <= char <= "~" or char in "\t\n\r\f\v"):
            raise FormulaError(f"unexpected character {char!r}", column)
        depth += (char in "([{") - (char in ")]}")
        if depth > MAX_DEPTH:
            raise FormulaError(f"formula is nested more than {MAX_DEPTH} levels deep", column)
    # One line, '^' -> '**'; positions[i] maps index i of the parsed source back into `text`.
    indent = len(text) - len(text.lstrip())
    source = re.sub(r"\s", " ", text[indent:]).replace("^", "**")
    positions = [indent + i for i, char in enumerate(text[indent:]) for _ in range(2 if char == "^" else 1)]
    positions.append(len(text))
    try:
        with warnings.catch_warnings():  # e.g. invalid escapes in (refused) strings
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode="eval").body
    except SyntaxError as error:
        column = positions[min(max((error.offset or 1) - 1, 0), len(source))] + 1
        message = error.msg.splitlines()[0] if error.msg else ""
        detail = "" if message in ("", "invalid syntax") else f": {message}"
        raise FormulaError(f"invalid syntax{detail}", column) from None
    except (RecursionError, MemoryError):
        raise FormulaError(f"formula is nested more than {MAX_DEPTH} levels deep") from None
    checker = _Checker(text, positions, namespace)
    checker.check(tree)
    return Formula(text, tuple(sorted(checker.variables, key=_natural_key)), tree, namespace)
