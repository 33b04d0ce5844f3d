"""What to differentiate: a catalog name, a GradBench eval, a formula, or ``file.py:func`` /
``module:func``.

:func:`find_target` turns any of them into a :class:`Target`: the function of one array,
the point, and which derivative to take (``derivative`` for R→R, ``grad`` for Rⁿ→R,
``jacobian`` for Rⁿ→Rᵐ). Formulas are parsed by :mod:`diffkit.bench.formula`, never
evaluated as Python; a file or module named by the user is imported, as running one's
own code is the point. A GradBench eval (:mod:`diffkit.gradbench.workloads`) is its
objective of one flat parameter vector at the input GradBench generates for ``size``,
with its hand-derived gradient as the target's ``exact`` derivative.

>>> t = find_target("log(x1) + x1*x2 - sin(x2)", at={"x1": 2.0, "x2": 0.5})
>>> t.kind, t.x.tolist()
('grad', [2.0, 0.5])
>>> t = find_target("gmm", size="2_5_1000")
>>> t.kind, t.x.size, t.exact(t.x).shape
('grad', 30, (30,))
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog
from ..core import DiffkitError
from .formula import FormulaError, parse_formula


@dataclass(frozen=True)
class Target:
    name: str
    f: Callable[[Any], Any]
    x: Any
    kind: str | None  # None: found by evaluating f once (in isolation, by the harness)
    closed_form: bool | None = None
    size: str | None = None  # a GradBench eval's size (GradBench's name for its input)
    exact: Callable[[Any], Any] | None = None  # the derivative at a point, derived by hand


def as_point(x: Any) -> np.ndarray:
    """A point as float64, or complex128 when it holds a complex number.

    >>> as_point([1, 2j]).dtype, as_point(1).dtype
    (dtype('complex128'), dtype('float64'))
    """
    return np.asarray(x, dtype=complex if np.iscomplexobj(x) else float)


def _number(text: str) -> float | complex:
    """``"0.5"`` as a float, ``"1+2j"`` as a complex number."""
    try:
        return float(text)
    except ValueError:
        return complex(text.replace(" ", ""))


def parse_at(text: str) -> dict[str, Any]:
    """``"x1=0.5,x2=2"``, ``"x=[1,2,3]"`` or ``"z=1+2j"`` to a dict of numbers / arrays.

    >>> parse_at("z=[1+2j, 0.5]")["z"]
    array([1. +2.j, 0.5+0.j])
    """
    out: dict[str, Any] = {}
    for part in re.split(r",(?![^\[]*\])", text):
        name, eq, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier():
            raise DiffkitError(f"bad --at entry {part.strip()!r}: write name=value, e.g. "
                               "x=0.5 or x1=1,x2=2 or x=[1,2,3]")
        try:
            if value.startswith("["):
                out[name] = as_point([_number(v) for v in value.strip("[]").split(",")])
            else:
                out[name] = _number(value)
        except ValueError:
            raise DiffkitError(f"bad --at value for {name}: {value!r} is not a number "
                               "(or a [list] of numbers; complex ones as 1+2j)") from None
    return out


def kind_for(x: Any, out: Any) -> str:
    """Which derivative a function with input ``x`` and output ``out`` asks for.

    >>> kind_for(1.0, "hello")
    Traceback (most recent call last):
    ...
    diffkit.core.DiffkitError: the function returned a str ('hello'), not numbers: return a number or an array of numbers
    """
    kind = getattr(np.asarray(out) if not isinstance(out, (str, bytes)) else None, "dtype", None)
    if kind is None or kind.kind not in "biufc":
        shown = repr(out) if len(repr(out)) <= 40 else repr(out)[:37] + "..."
        raise DiffkitError(f"the function returned a {type(out).__name__} ({shown}), not "
                           "numbers: return a number or an array of numbers")
    if np.ndim(out) == 0:  # (of a complex z: the gradient, df/dx - i df/dy, not df/dx)
        return "derivative" if np.ndim(x) == 0 and not np.iscomplexobj(x) else "grad"
    return "jacobian"


def _point(at: dict[str, Any] | None, default: Any, name: str) -> Any:
    if not at:
        return default
    if set(at) != {"x"}:
        raise DiffkitError(f"{name} takes one argument: give --at x=..., not "
                           f"{', '.join(sorted(at))}")
    return at["x"]


def _load(spec: str) -> Callable:
    """``path/to/file.py:func`` or ``package.module:func``."""
    where, _, func = spec.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise DiffkitError(f"file not found: {where}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.parent.resolve()))
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # the user's file: say what went wrong there, in one line
            raise DiffkitError(f"{where} failed to import: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        finally:
            sys.path.pop(0)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise DiffkitError(f"cannot import module {where!r}: {exc}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise DiffkitError(f"{where} has no function {func!r}")
    if isinstance(fn, np.ufunc) or getattr(fn, "__module__", "").split(".")[0] == "numpy":
        raise DiffkitError(f"{spec} is numpy's own, which diffkit cannot see into: use "
                           f"diffkit.numpy's (a formula such as \"{func}(x)\"), or a file "
                           "whose function is written with diffkit.numpy")
    return fn


def find_target(spec: str | Callable, at: dict[str, Any] | None = None, n: int | None = None,
            depth: int | None = None, x: Any = None, size: str | None = None) -> Target:
    """The :class:`Target` named by ``spec`` (see the module docstring); ``size`` chooses a
    GradBench eval's input (and applies to nothing else)."""
    evals = _evals(spec, size)
    if size is not None and spec not in evals:
        raise DiffkitError(f"--size applies to GradBench evals only ({', '.join(evals)}); "
                           "for a catalog function use --dim or --depth")
    if spec in evals:
        return _gradbench(spec, at, n, depth, x, size)
    if callable(spec):
        if x is None:
            raise DiffkitError("give the point to differentiate at, e.g. compare(f, 0.5)")
        return Target(getattr(spec, "__name__", "f"), spec, as_point(x), None)
    if spec in catalog.names():
        entry = catalog.get(spec)
        f, default = entry.make(n=n, depth=depth)
        x0 = as_point(_point(at, default, spec) if x is None else x)
        if np.ndim(default) and not x0.ndim:
            raise DiffkitError(f"{spec} takes a vector x ({np.size(default)} values by default; "
                               f"--dim sets n): give --at x=[v1,v2,...], not one number")
        return Target(spec, f, x0, entry.kind, entry.closed_form)
    if n is not None or depth is not None:
        raise DiffkitError("--dim and --depth apply to catalog functions only")
    if re.fullmatch(r"[\w./\\-]+\.py:\w+|[\w.]+:\w+", spec):
        fn = _load(spec)
        x0 = as_point(_point(at, 1.0, spec) if x is None else x)
        return Target(spec, fn, x0, None)
    if spec.strip().endswith(".py"):
        raise DiffkitError(f"{spec.strip()} is a file: name the function in it too, "
                           f"e.g. {spec.strip()}:f (path/to/file.py:func)")
    if re.fullmatch(r"\s*[A-Za-z_]\w*\s*", spec):  # a bare name: meant as a catalog name
        close = difflib.get_close_matches(spec.strip(), evals, n=2)
        if close and not difflib.get_close_matches(spec.strip(), catalog.names(), n=1):
            raise DiffkitError(f"unknown function {spec.strip()!r}; did you mean the "
                               f"GradBench eval {' or '.join(close)}?")
        catalog.get(spec.strip())  # raises "unknown catalog function ..., did you mean ..."
    try:
        formula = parse_formula(spec)
    except FormulaError as exc:
        raise DiffkitError(str(exc)) from None
    names = formula.variables
    values = dict(at or {})
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise DiffkitError(f"--at names {', '.join(unknown)}, which the formula does not use; "
                           f"its variables: {', '.join(names) or 'none'}")
    missing = [v for v in names if v not in values] if values else []
    if missing:
        raise DiffkitError(f"missing value for {', '.join(missing)}: give --at "
                           + ",".join(f"{v}=..." for v in names))
    point = [values.get(v, 1.0) for v in names]
    if any(np.ndim(v) for v in point):
        raise DiffkitError("a formula's variables are numbers: give --at x1=0.5,x2=2")
    if len(names) <= 1 and not np.iscomplexobj(point):  # (a complex z: grad, not df/dx)
        return Target(spec, formula if names else (lambda x: formula() + 0 * x),
                      np.float64(point[0] if point else 1.0), "derivative", True)
    return Target(spec, lambda v: formula(*(v[i] for i in range(len(names)))),
                  as_point(point), "grad", True)


def _evals(spec: Any, size: str | None) -> list[str]:
    """The GradBench evals' names, where ``spec`` may be one or ``size`` is given (their
    modules are imported only then)."""
    if size is None and (not isinstance(spec, str) or spec in catalog.names()):
        return []
    from ..gradbench.workloads import names

    return names()


def _gradbench(name: str, at: dict[str, Any] | None, n: int | None, depth: int | None,
               x: Any, size: str | None) -> Target:
    """Eval ``name`` at ``size`` (its smallest by default) as a target, or at the flat
    parameter vector ``x`` (or ``--at x=[...]``) of that size's length."""
    from ..gradbench.workloads import instance

    if n is not None or depth is not None:
        raise DiffkitError(f"--dim and --depth do not apply to GradBench's {name}: choose "
                           "its input with --size")
    p = instance(name, size)
    x0 = as_point(_point(at, p.x, name) if x is None else x)
    if x0.shape != p.x.shape:
        raise DiffkitError(f"{name} {p.size} takes a vector of {p.x.size} parameters, got "
                           f"shape {x0.shape}")
    return Target(name, p.f, x0, "grad", False, p.size, p.exact)


def tanh_ax(m: int, n: int) -> Target:
    """The catalog's tanh(A x) with an m×n matrix A: a Jacobian of shape (m, n).

    >>> tanh_ax(2, 3).f(np.zeros(3)).shape
    (2,)
    """
    return Target(f"tanh_Ax_{m}x{n}", functools.partial(catalog.tanh_ax, m=m),
                  np.linspace(-1.0, 1.0, n), "jacobian", True)
