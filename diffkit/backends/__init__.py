"""Backends: interpreters of the primitive table, behind one small protocol.

A backend differentiates a function of ONE array ``x`` (the transforms in
:mod:`diffkit.transforms.functional` take care of ``argnums``, several arguments and pytrees).
It implements what it can of :class:`Backend`; ``jvp``, ``vjp`` (from the whole Jacobian),
``hessian`` and ``derivative`` have defaults built from the others. A question a backend
cannot answer by its nature (no closed form, no complex step) raises
:class:`NotApplicable`; ``stats()`` tells the harness what else it measured (setup time,
evaluations, sizes). Backends are found by name: the built-in ones, then the entry-point
group ``diffkit.backends`` (a third-party package registers
``name = "package.module:BackendClass"`` there).

>>> import diffkit as dk
>>> dk.backend("reverse").name
'reverse'
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, ClassVar

import numpy as np

from ..checks import check_scalar, split_aux
from ..core import DiffkitError, NotApplicable

Fun = Callable[[Any], Any]

BUILTIN = {
    "forward": "diffkit.backends.forward:ForwardBackend",
    "reverse": "diffkit.backends.reverse:ReverseBackend",
    "symbolic": "diffkit.backends.symbolic:SymbolicBackend",
    "numeric": "diffkit.backends.numeric:NumericBackend",
    "compiled": "diffkit.backends.compiled:CompiledBackend",
}
STATS = {  # what Backend.stats() may report: the harness's size and setup columns
    "setup_s": "seconds of one-off work before the calls (symbolic derive + compile, jit)",
    "fevals": "evaluations of f for one derivative (finite differences)",
    "step": "the finite-difference step(s) used",
    "expr_nodes": "nodes of the symbolic derivative as a tree (repeats counted)",
    "expr_dag_nodes": "nodes of the symbolic derivative after common-subexpression elimination",
    "tape_ops": "primitives recorded on the tape (reverse) or the trace (forward)",
    "tape_bytes": "bytes of the arrays a reverse tape keeps for the backward pass",
    "graph_eqns": "equations of the compiled derivative graph after optimization",
    "graph_eqns_traced": "equations of the compiled derivative graph as traced",
    "graph_passes": "the optimization passes' effect, e.g. 24 equations → 22 after ...",
    "fusion": "the fusion report: kernels and library calls, e.g. 1 kernel, 0 library calls",
}


class Backend:
    """The protocol. Subclasses set ``name`` and ``defaults`` (their options)."""

    name: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            known = ", ".join(sorted(self.defaults)) or "none"
            raise DiffkitError(f"backend {self.name!r} has no option {unknown[0]!r}; "
                               f"its options: {known}")
        for key, value in options.items():  # a switch given "maybe" would read as on
            if isinstance(self.defaults[key], bool) and not isinstance(value, bool):
                raise DiffkitError(f"backend {self.name!r}: option {key!r} is true or false, "
                                   f"not {value!r}")
        self.options = {**self.defaults, **options}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"backend({self.name!r}{', ' if opts else ''}{opts})"

    def _missing(self, what: str) -> NotApplicable:
        return NotApplicable(f"the {self.name!r} backend does not compute {what}; "
                             f"backends: {', '.join(backends())}")

    def value_and_grad(self, fun: Fun, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        """``(f(x), aux, ∇f(x))`` for scalar ``f`` (``aux`` is None without has_aux)."""
        raise self._missing("gradients")

    @staticmethod
    def call_on_arrays(fun: Fun, x: Any, has_aux: bool) -> tuple[Any, Any, Fun]:
        """For backends that call f on plain arrays: ``(f(x), aux, f without its aux)``."""
        out = fun(x)
        value, aux = split_aux(out) if has_aux else (out, None)
        check_scalar(value, "grad")
        return value, aux, (lambda z: fun(z)[0]) if has_aux else fun

    def jacobian(self, fun: Fun, x: Any) -> Any:
        """``J(x)`` with shape ``f(x).shape + x.shape``."""
        raise self._missing("Jacobians")

    def value_and_jacobian(self, fun: Fun, x: Any) -> tuple[Any, Any]:
        """``(f(x), J(x))``, what the default ``jvp`` and ``vjp`` contract."""
        return fun(x), self.jacobian(fun, x)

    def jvp(self, fun: Fun, x: Any, x_dot: Any) -> tuple[Any, Any]:
        """``(f(x), J(x) x_dot)``; by default the whole Jacobian times ``x_dot``."""
        y, jac = self.value_and_jacobian(fun, x)
        return y, to_numpy(np.tensordot(jac, x_dot, axes=np.ndim(x_dot)))

    def vjp(self, fun: Fun, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        """``(f(x), y_bar -> y_barᵀ J(x))``; by default from the whole Jacobian."""
        y, jac = self.value_and_jacobian(fun, x)
        return y, lambda y_bar: to_numpy(np.tensordot(y_bar, jac, axes=np.ndim(y_bar)))

    def hessian(self, fun: Fun, x: Any) -> Any:
        """The Jacobian of the gradient, both by this backend."""
        return self.jacobian(lambda z: self.value_and_grad(fun, z, False)[2], x)

    def derivative(self, fun: Fun, x: Any) -> Any:
        """Elementwise derivative of an elementwise ``fun`` over the array ``x``."""
        return self.jvp(fun, x, np.ones_like(x))[1]

    def stage(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call(static, *arrays)`` (a whole transformed call; ``static`` hashable) as
        this backend runs it: as it is by default; the compiled backend builds one program
        per ``static`` and array shapes, the arrays its inputs (new data, no new program)."""
        return call

    def tolerance(self, kind: str) -> float:
        """The relative error this method promises against the exact derivative of ``kind``
        (``derivative``, ``grad``, ``jacobian``, ``hessian``); a larger one is reported as
        ``inaccurate``. Exact methods (AD, symbolic) promise rounding error, with room for
        functions that amplify it.

        >>> backend("forward").tolerance("grad")
        1e-08
        """
        return 1e-8

    def stats(self, fun: Fun, x: Any) -> dict[str, Any]:
        """What this backend measured of its latest derivative of ``fun`` at ``x``, beyond
        time and memory: keys of :data:`STATS` (none by default)."""
        return {}


def to_numpy(v: Any, convert: Callable[[Any], Any] = np.asarray) -> Any:
    """A result as diffkit returns it: a writable float64 array, or np.float64 for 0-d.

    ``convert`` turns another library's array into numpy's.

    >>> to_numpy([1, 2]), to_numpy(np.array(3.0))
    (array([1., 2.]), np.float64(3.0))
    """
    arr = np.array(convert(v), dtype=np.float64)
    return arr[()] if arr.ndim == 0 else arr


def _plugins() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group="diffkit.backends")}


def backends() -> list[str]:
    """Names of the registered backends: built-in, then plug-ins.

    >>> {"forward", "reverse"} <= set(backends())
    True
    """
    return list(BUILTIN) + sorted(set(_plugins()) - set(BUILTIN))


def backend(spec: str, **options: Any) -> Backend:
    """A backend by name, configured with ``options``, or by a spec that carries them.

    ``backend("numeric", method="central", order=4)`` and
    ``backend("numeric[method=central,order=4]")`` are the same backend; the CLI, report
    specs and every transform's ``backend=`` read this one grammar.

    >>> backend("numeric[method=central,order=4]").options["order"]
    4
    """
    name, given = parse_spec(spec)
    clash = sorted(set(given) & set(options))
    if clash:
        raise DiffkitError(f"backend {spec!r}: option {clash[0]!r} is given twice; give it once")
    options = {**given, **options}
    if name in BUILTIN:
        module, cls = BUILTIN[name].split(":")
        return getattr(importlib.import_module(module), cls)(**options)
    plugin = _plugins().get(name)
    if plugin is None:
        raise DiffkitError(f"unknown backend {name!r}; available: {', '.join(backends())}")
    return plugin.load()(**options)


def as_backend(spec: str | Backend) -> Backend:
    """Accept a backend spec (``"compiled[fuse=false]"``) or a configured backend object."""
    if isinstance(spec, Backend):
        return spec
    if isinstance(spec, str):
        return backend(spec)
    raise DiffkitError(f"backend= takes a name or dk.backend(...), got {type(spec).__name__}")


_SPEC = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*(?:\[([^\[\]]*)\])?\s*")


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """A backend spec's name and options: ``name[key=value,key=value]``.

    Values are numbers, ``true``/``false``/``none`` or text.

    >>> parse_spec("numeric[method=central,order=4]")
    ('numeric', {'method': 'central', 'order': 4})
    >>> parse_spec("compiled[fuse=false]")
    ('compiled', {'fuse': False})
    """
    if not isinstance(spec, str):
        raise DiffkitError(f"a backend is named by text, got {type(spec).__name__}")
    match = _SPEC.fullmatch(spec)
    if match is None:
        raise DiffkitError(f"cannot read backend {spec!r}: write name[option=value,...], "
                           "e.g. numeric[method=central,order=4]")
    name, parts = match.group(1), (match.group(2) or "").split(",")
    options: dict[str, Any] = {}
    for part in (p.strip() for p in parts):
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise DiffkitError(f"bad backend option {part!r} in {spec!r}: write "
                               "name[option=value,...], e.g. numeric[method=richardson]")
        options[key.strip()] = _literal(value.strip())
    return name.strip(), options


def _literal(text: str) -> Any:
    """Option values: numbers, true/false/none, else the text itself."""
    words = {"true": True, "false": False, "none": None}
    if text.lower() in words:
        return words[text.lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def label(b: Backend) -> str:
    """``name`` plus the options that differ from the defaults, in spec syntax.

    >>> label(backend("numeric", method="richardson")), label(backend("reverse"))
    ('numeric[method=richardson]', 'reverse')
    """
    changed = [f"{k}={_text(v)}" for k, v in b.options.items() if b.defaults.get(k) != v]
    return f"{b.name}[{','.join(changed)}]" if changed else b.name


def _text(value: Any) -> str:
    """An option value as the grammar writes it (``false``, not ``False``)."""
    return {True: "true", False: "false", None: "none"}.get(value, str(value)) \
        if isinstance(value, (bool, type(None))) else str(value)
