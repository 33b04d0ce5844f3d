"""Backends: interpreters of the primitive table, behind one small protocol.

A backend differentiates a function of ONE array ``x`` (the transforms in
:mod:`diffkit.transforms` take care of ``argnums``, several arguments and pytrees).
It implements what it can of :class:`Backend`; ``hessian`` and ``derivative`` have
defaults built from the others. Backends are found by name: the built-in ones, then
the entry-point group ``diffkit.backends`` (a third-party package registers
``name = "package.module:BackendClass"`` there).

>>> import diffkit as dk
>>> dk.backend("reverse").name
'reverse'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, ClassVar

import numpy as np

from ..core import DiffkitError

Fun = Callable[[Any], Any]

BUILTIN = {
    "forward": "diffkit.backends.forward:ForwardBackend",
    "reverse": "diffkit.backends.reverse:ReverseBackend",
    "symbolic": "diffkit.backends.symbolic:SymbolicBackend",
    "numeric": "diffkit.backends.numeric:NumericBackend",
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
        self.options = {**self.defaults, **options}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"backend({self.name!r}{', ' if opts else ''}{opts})"

    def _missing(self, what: str) -> DiffkitError:
        return DiffkitError(f"the {self.name!r} backend does not compute {what}; "
                            f"backends: {', '.join(backends())}")

    def value_and_grad(self, fun: Fun, x: Any, has_aux: bool) -> tuple[Any, Any, Any]:
        """``(f(x), aux, ∇f(x))`` for scalar ``f`` (``aux`` is None without has_aux)."""
        raise self._missing("gradients")

    @staticmethod
    def call_on_arrays(fun: Fun, x: Any, has_aux: bool) -> tuple[Any, Any, Fun]:
        """For backends that call f on plain arrays: ``(f(x), aux, f without its aux)``."""
        from ..checks import check_scalar, split_aux

        out = fun(x)
        value, aux = split_aux(out) if has_aux else (out, None)
        check_scalar(value, "grad")
        return value, aux, (lambda z: fun(z)[0]) if has_aux else fun

    def jvp(self, fun: Fun, x: Any, x_dot: Any) -> tuple[Any, Any]:
        """``(f(x), J(x) x_dot)``."""
        raise self._missing("Jacobian-vector products")

    def vjp(self, fun: Fun, x: Any) -> tuple[Any, Callable[[Any], Any]]:
        """``(f(x), u -> uᵀ J(x))``."""
        raise self._missing("vector-Jacobian products")

    def jacobian(self, fun: Fun, x: Any) -> Any:
        """``J(x)`` with shape ``f(x).shape + x.shape``."""
        raise self._missing("Jacobians")

    def hessian(self, fun: Fun, x: Any) -> Any:
        """The Jacobian of the gradient, both by this backend."""
        return self.jacobian(lambda z: self.value_and_grad(fun, z, False)[2], x)

    def derivative(self, fun: Fun, x: Any) -> Any:
        """Elementwise derivative of an elementwise ``fun`` over the array ``x``."""
        return self.jvp(fun, x, np.ones_like(x))[1]


def _plugins() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group="diffkit.backends")}


def backends() -> list[str]:
    """Names of the registered backends: built-in, then plug-ins.

    >>> {"forward", "reverse"} <= set(backends())
    True
    """
    return list(BUILTIN) + sorted(set(_plugins()) - set(BUILTIN))


def backend(name: str, **options: Any) -> Backend:
    """A backend by name, configured with ``options`` (e.g. ``method="central"``)."""
    if name in BUILTIN:
        module, cls = BUILTIN[name].split(":")
        return getattr(importlib.import_module(module), cls)(**options)
    plugin = _plugins().get(name)
    if plugin is None:
        raise DiffkitError(f"unknown backend {name!r}; available: {', '.join(backends())}")
    return plugin.load()(**options)


def as_backend(spec: str | Backend) -> Backend:
    """Accept a backend name or a configured backend object."""
    if isinstance(spec, Backend):
        return spec
    if isinstance(spec, str):
        return backend(spec)
    raise DiffkitError(f"backend= takes a name or dk.backend(...), got {type(spec).__name__}")


def backend_from_spec(spec: str) -> Backend:
    """A backend from text, as the CLI takes it: ``"numeric:method=richardson:order=4"``."""
    name, *parts = spec.strip().split(":")
    options: dict[str, Any] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise DiffkitError(f"bad backend option {part!r} in {spec!r}: write "
                               "name:option=value, e.g. numeric:method=richardson")
        options[key] = _literal(value)
    return backend(name, **options)


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
    """``name`` plus the options that differ from the defaults, in spec syntax."""
    changed = [f"{k}={v}" for k, v in b.options.items() if b.defaults.get(k) != v]
    return ":".join([b.name, *changed])
