"""The accuracy atlas: each elementwise function's value, first and second derivative,
in ulps against mpmath at 50 digits, over its whole domain, for every way of computing them.

For one function (an elementwise primitive of the table, a slice of a binary one such as
``logaddexp(x, 0)``, or a function of :mod:`diffkit.scipy.special`) the points are:
log-spaced magnitudes of both signs from 1e-300 up to where the function's values
under- or overflow, uniform points over its working range, and points approaching its
zeros, poles and the edges of its domain (``s ± δ``, δ from 1e-15 to 0.1 relative).
At each point the exact value and derivatives come from mpmath at :data:`DPS` digits
(closed forms where written out, with extra digits where a closed form cancels, else
``mp.diff``), taken at the exact binary value of the float64 input.

The error of a computed number ``g`` against the exact ``r`` is ``|g - r| / ulp(r)``, ``ulp``
being the spacing of float64 numbers at ``r`` (a correctly rounded result is within 0.5).
A point where the exact result is not a normal float (zero, subnormal, beyond the
largest double, undefined, not real) is left out of that quantity's maxima and counted.
A computed NaN or infinity where the exact result is a normal float counts as infinitely
many ulps.

The methods (:data:`METHODS`): diffkit's eager reverse and forward modes, the compiled
backend's fused kernels (when numba is installed), central differences and the complex
step (first derivative only), and the peers where they are installed: JAX in float64,
PyTorch in float64 and autograd, each with its own function of that name
(``jax.scipy.special.expit`` for ``sigmoid``), differentiated by its own rules.

``python -m diffkit.bench.atlas --markdown`` prints the summary table of
``docs/accuracy.md``; ``diffkit accuracy NAME`` the full table of one function.

>>> r = measure(CASES["exp"], methods=("reverse",), n=40)
>>> r[0]["method"], r[0]["value"]["max"] <= 1.0
('diffkit reverse', True)
"""

from __future__ import annotations

import importlib.util
import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from .. import numpy as dnp
from ..scipy import special as dsp
from ..backends import backend
from ..core import NotApplicable
from ..transforms import functional as fx
from .atlas_cases import CASES, Case, Lib, _diff, cases, mp

DPS = 50
TINY, HUGE = float(np.finfo(float).tiny), float(np.finfo(float).max)
QUANTITIES = ("value", "d1", "d2")
#: method key -> the label the tables show
METHODS = {"reverse": "diffkit reverse", "forward": "diffkit forward",
           "compiled": "diffkit compiled", "central": "central differences",
           "complex": "complex step", "jax": "JAX (float64)", "torch": "PyTorch (float64)",
           "autograd": "autograd"}
DIFFKIT = ("reverse", "forward", "compiled")
PEERS = ("jax", "torch", "autograd")


# ----------------------------------------------------------------------------- the points


def points(case: Case, n: int = 400, seed: int = 0) -> np.ndarray:
    """About ``n`` points of ``case``'s domain (see the module doc), sorted, distinct: the
    same ones each time for ``seed`` 0 (the documented tables), others for another seed
    (the distances to the special points drawn too): a search for what the fixed points
    miss."""
    rng = np.random.default_rng([zlib.crc32(case.name.encode()), seed] if seed
                                else zlib.crc32(case.name.encode()))
    lo, hi = case.domain
    top = min(case.span, max(abs(lo) if math.isfinite(lo) else HUGE,
                             abs(hi) if math.isfinite(hi) else HUGE), 1e300)
    k = max(n // 3, 4)
    # log-spaced magnitudes of both signs, from 1e-300 to the largest worth sampling
    mags = 10.0 ** (np.linspace(-300.0, math.log10(top), k // 2)
                    + rng.uniform(-0.1, 0.1, k // 2))
    low = case.negative_span if case.negative_span is not None else top
    logs = np.concatenate([mags, -mags[mags <= low]])
    a, b = max(case.active[0], lo), min(case.active[1], hi)
    uniform = rng.uniform(a, b, k)
    near: list[float] = []
    deltas = 10.0 ** rng.uniform(-15.0, -1.0, 8) if seed else np.geomspace(1e-15, 0.1, 8)
    edges = [e for e in (lo, hi) if math.isfinite(e)]
    for s in (*case.special, *edges):
        scale = abs(s) if s else 1.0
        near += [s] + [s + side * d * scale for d in deltas for side in (-1.0, 1.0)]
        if s == 0.0:
            near += [side * d for d in (1e-300, 1e-200, 1e-100, 1e-50, 1e-30) for side in (-1, 1)]
    near_a = np.array(near, dtype=float)
    if near_a.size > n - 2 * k:
        near_a = rng.choice(near_a, max(n - 2 * k, 0), replace=False)
    extra = rng.uniform(a, b, max(n - 2 * k - near_a.size, 0))
    xs = np.concatenate([logs, uniform, near_a, extra])
    xs = xs[np.isfinite(xs) & (xs >= lo) & (xs <= hi)]
    return np.unique(xs)


# ----------------------------------------------------------------------------- references


def _as_real(v: Any) -> Any:
    """An mpmath result as a real number, NaN if it is not one."""
    if isinstance(v, mpmath.mpc):
        return v.real if v.imag == 0 else mp.nan
    return v


def _derivative(case: Case, k: int) -> Callable[[Any], Any]:
    given = (case.exact, case.d1, case.d2)[k]
    if given is not None:
        return given

    return lambda x: _diff(case.exact, x, k, case.domain)


def reference(case: Case, xs: np.ndarray, upto: int = len(QUANTITIES)
              ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The exact value and derivatives at ``xs`` (the first ``upto`` of
    :data:`QUANTITIES`): for each quantity the float64 nearest the exact number and the
    rest (``hi + lo`` carries ~106 bits); NaN where undefined."""
    out = {}
    for k, q in enumerate(QUANTITIES[:upto]):
        f = _derivative(case, k)
        hi, lo = np.empty(xs.size), np.empty(xs.size)
        for i, x in enumerate(xs):
            extra = case.lift(float(x)) if case.lift else 0
            with mpmath.workdps(DPS + extra):
                try:
                    v = _as_real(f(mp.mpf(float(x))))
                except (ValueError, ZeroDivisionError, OverflowError):
                    v = mp.nan
                if not mp.isfinite(v):
                    hi[i], lo[i] = (float(v) if not mp.isnan(v) else math.nan), 0.0
                    continue
                h = float(v)
                hi[i] = h
                lo[i] = float(v - h) if math.isfinite(h) else 0.0
        out[q] = (hi, lo)
    return out


def value_errors(name: str, xs: np.ndarray, got: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ulps, points)``: ``got``'s error against case ``name``'s exact value at ``xs``,
    where that value is a normal float, and those points of ``xs``."""
    hi, lo = reference(CASES[name], xs, upto=1)[QUANTITIES[0]]
    counted = normal(hi)
    return ulps(got, hi, lo)[counted], xs[counted]


def normal(hi: np.ndarray) -> np.ndarray:
    """Where the exact result is a normal float (neither 0, subnormal, NaN nor beyond range)."""
    a = np.abs(hi)
    return np.isfinite(hi) & (a >= TINY) & (a <= HUGE)


def ulps(got: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``|got - exact| / ulp(exact)``; infinite where ``got`` is NaN or infinite."""
    got = np.asarray(got, dtype=float)
    with np.errstate(all="ignore"):
        err = np.abs((got - hi) - lo) / np.spacing(np.abs(hi))
    return np.where(np.isfinite(got), err, np.inf)


# ----------------------------------------------------------------------------- the methods


DK = Lib(dnp, dsp)


class _Names:
    """A peer's functions by numpy's and scipy.special's names (``renames``: its own
    spelling); a missing one is NotApplicable. ``wrap`` adapts each function found."""

    def __init__(self, lib: str, modules: Sequence[Any], renames: dict[str, str] | None = None,
                 wrap: Callable[[Callable], Callable] | None = None) -> None:
        self._lib, self._modules, self._renames = lib, modules, renames or {}
        self._wrap = wrap or (lambda f: f)

    def __getattr__(self, name: str) -> Any:
        own = self._renames.get(name, name)
        for module in self._modules:
            f = getattr(module, own, None)
            if callable(f):
                return self._wrap(f)
        raise NotApplicable(f"{self._lib} has no {name}")


def _diffkit(method: str, f: Callable[[Any], Any], xs: np.ndarray) -> dict[str, Any]:
    """Value, first and second derivative of ``f`` by one of diffkit's ways."""
    def total(g: Callable) -> Callable:
        return lambda x: dnp.sum(g(x))

    if method == "reverse":
        d1 = fx.grad(total(f))
        return {"value": lambda: f(xs), "d1": lambda: d1(xs), "d2": lambda: fx.grad(total(d1))(xs)}
    if method == "forward":
        d1 = fx.derivative(f)
        return {"value": lambda: fx.jvp(f, (xs,), (np.ones_like(xs),))[0], "d1": lambda: d1(xs),
                "d2": lambda: fx.derivative(d1)(xs)}
    if method == "compiled":
        from ..compiler.jit import jit  # (deferred: the compiler loads numba's LLVM)

        be = backend("compiled", fuse=True)
        d1 = fx.grad(total(f), backend=be)
        return {"value": lambda: jit(f)(xs), "d1": lambda: d1(xs),
                "d2": lambda: fx.grad(total(fx.grad(total(f))), backend=be)(xs)}
    if method == "complex":  # Im f(x + ih) / h, h the numeric backend's power of two
        return {"d1": lambda: _complex_step(f, xs)}
    numeric = backend("numeric", method=method)
    return {"d1": lambda: numeric.derivative(f, xs)}


def _complex_step(f: Callable[[Any], Any], xs: np.ndarray) -> np.ndarray:
    """The complex step at every point, as ``numeric[method=complex]`` takes it but without
    its check against central differences (which refuses the whole array where one point
    underflows); a function that takes no complex value is NotApplicable."""
    h = 2.0 ** np.floor(np.log2(1e-20 * np.maximum(np.abs(xs), 1.0)))
    try:
        out = np.asarray(f(xs + 1j * h))
    except (TypeError, NotApplicable) as exc:
        raise NotApplicable(f"no complex values: {_line(exc)}") from None
    if not np.iscomplexobj(out):
        raise NotApplicable("the function drops the imaginary part (not analytic here)")
    return out.imag / h


def _jax(case: Case, xs: np.ndarray) -> dict[str, Any]:
    import jax  # (deferred: a peer library, optional)

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp  # (deferred: a peer library, optional)
    import jax.scipy.special as jsp  # (deferred: a peer library, optional)

    lib = Lib(jnp, _Names("JAX", [jsp, jax.nn]), "jax")

    def f(x: Any) -> Any:
        return case.fn(lib, x)

    d1 = jax.grad(lambda x: jnp.sum(f(x)))
    d2 = jax.grad(lambda x: jnp.sum(d1(x)))
    x = jnp.asarray(xs, dtype=jnp.float64)
    return {"value": lambda: np.asarray(f(x)), "d1": lambda: np.asarray(d1(x)),
            "d2": lambda: np.asarray(d2(x))}


def _torch(case: Case, xs: np.ndarray) -> dict[str, Any]:
    import torch  # (deferred: a peer library, optional)

    def tensors(fn: Callable) -> Callable:
        def call(*args: Any) -> Any:
            return fn(*[torch.tensor(a, dtype=torch.float64) if isinstance(a, float) else a
                        for a in args])
        return call

    lib = Lib(_Names("PyTorch", [torch], {"mod": "remainder", "rint": "round"}, tensors),
              _Names("PyTorch", [torch.special, torch],
                     {"j0": "bessel_j0", "j1": "bessel_j1", "y0": "bessel_y0",
                      "y1": "bessel_y1"}, tensors), "torch")

    def derivatives(order: int) -> np.ndarray:
        x = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
        y = case.fn(lib, x)
        for _ in range(order):
            if not y.requires_grad:
                return np.zeros(xs.shape)
            (y,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        return y.detach().numpy().copy()

    return {"value": lambda: derivatives(0), "d1": lambda: derivatives(1),
            "d2": lambda: derivatives(2)}


def _autograd(case: Case, xs: np.ndarray) -> dict[str, Any]:
    import autograd  # (deferred: a peer library, optional)
    import autograd.numpy as anp  # (deferred: a peer library, optional)
    import autograd.scipy.special as asp  # (deferred: a peer library, optional)

    lib = Lib(anp, _Names("autograd", [asp]), "autograd")

    def f(x: Any) -> Any:
        return case.fn(lib, x)

    d1 = autograd.elementwise_grad(f)
    return {"value": lambda: np.asarray(f(xs)), "d1": lambda: np.asarray(d1(xs)),
            "d2": lambda: np.asarray(autograd.elementwise_grad(d1)(xs))}


PEER_RUNNERS = {"jax": _jax, "torch": _torch, "autograd": _autograd}
PEER_PACKAGES = {"jax": "jax", "torch": "torch", "autograd": "autograd", "compiled": "numba"}


def available(method: str) -> bool:
    """Whether ``method`` can run here (its package is installed)."""
    package = PEER_PACKAGES.get(method)
    return package is None or importlib.util.find_spec(package) is not None


def _runs(case: Case, method: str, xs: np.ndarray) -> dict[str, Callable[[], Any]]:
    if method in PEER_RUNNERS:
        return PEER_RUNNERS[method](case, xs)
    return _diffkit(method, lambda x: case.fn(DK, x), xs)


def _quiet(what: Callable[[], Any]) -> Any:
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return what()


@dataclass
class Stat:
    """One quantity's errors: max and 99th percentile in ulps, the x of the max, and how
    many points counted (``n``) or were left out (``excluded``: exact result not normal)."""

    max: float
    p99: float
    x: float
    n: int
    excluded: int

    def as_dict(self) -> dict[str, Any]:
        return {"max": self.max, "p99": self.p99, "x": self.x, "n": self.n,
                "excluded": self.excluded}


def stat(err: np.ndarray, xs: np.ndarray, counted: np.ndarray) -> Stat | None:
    """The summary of ``err`` over the points ``counted``; None if none is."""
    if not counted.any():
        return None
    e, x = err[counted], xs[counted]
    worst = int(np.argmax(e))
    return Stat(float(e[worst]), float(np.quantile(e, 0.99, method="higher")), float(x[worst]),
                int(counted.sum()), int((~counted).sum()))


def measure(case: Case, methods: Sequence[str] = tuple(METHODS), n: int = 400,
            xs: np.ndarray | None = None, ref: dict | None = None, detail: bool = False,
            seed: int = 0) -> list[dict[str, Any]]:
    """One record per method: ``{"function", "method", "value", "d1", "d2", "note"}``, each
    quantity ``Stat.as_dict()`` (None: not computed by it, or no point counted); methods
    not installed are left out, one that fails says why in ``note``. With ``detail`` a
    record also holds ``ulps``: per quantity computed, the error at each point (3
    significant digits; None where the point is left out), for a figure."""
    xs = points(case, n, seed) if xs is None else xs
    ref = reference(case, xs) if ref is None else ref
    records = []
    for method in methods:
        if not available(method):
            continue
        rec: dict[str, Any] = {"function": case.name, "method": METHODS[method], "key": method,
                               "points": int(xs.size), "value": None, "d1": None, "d2": None,
                               "note": ""}
        notes = []
        try:
            runs = _runs(case, method, xs)
        except (NotApplicable, ImportError) as exc:
            rec["note"] = f"n/a: {_line(exc)}"
            records.append(rec)
            continue
        for q, run in runs.items():
            if q not in ref:  # (a reference of fewer quantities: the others are not measured)
                continue
            try:
                got = np.asarray(_quiet(run), dtype=float).reshape(xs.shape)
            except Exception as exc:  # noqa: BLE001  (a peer's or a rule's failure: reported)
                notes.append(f"{q}: n/a ({_line(exc)})")
                continue
            hi, lo = ref[q]
            err, counted = ulps(got, hi, lo), normal(hi)
            s = stat(err, xs, counted)
            rec[q] = s.as_dict() if s else None
            if detail:
                rec.setdefault("ulps", {})[q] = [float(f"{e:.3g}") if c else None
                                                 for e, c in zip(err.tolist(), counted)]
        rec["note"] = "; ".join(notes)
        records.append(rec)
    return records


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def atlas(wanted: Iterable[str] = (), methods: Sequence[str] = tuple(METHODS), n: int = 400
          ) -> list[dict[str, Any]]:
    """:func:`measure` of every case of ``wanted`` (all by default)."""
    return [r for c in cases(wanted) for r in measure(c, methods, n)]


# ----------------------------------------------------------------------------- tables


def ahead(records: list[dict[str, Any]], ours: Sequence[str] = DIFFKIT) -> list[dict[str, Any]]:
    """Where an installed peer's maximum is below one of diffkit's (``ours``: method keys),
    value or first derivative, as the tables print them (:func:`fmt_ulps`: 0.5003 and
    0.4998 are both 0.5): one dict per function, quantity and diffkit method, with
    ``ulps`` (diffkit's), ``best`` (the peer's) and ``peer``.

    >>> rows = ahead([{"function": "exp", "key": "reverse", "value": {"max": 0.59}, "d1": None},
    ...               {"function": "exp", "key": "torch", "value": {"max": 0.51}, "d1": None}])
    >>> [(r["quantity"], r["method"], r["ulps"], r["peer"], r["best"]) for r in rows]
    [('value', 'reverse', 0.59, 'torch', 0.51)]
    """
    def printed(v: float) -> float:
        return float(fmt_ulps(v))

    out = []
    for function in dict.fromkeys(r["function"] for r in records):
        rows = [r for r in records if r["function"] == function]
        for q in ("value", "d1"):
            peers = [(r[q]["max"], r["key"]) for r in rows if r["key"] in PEERS and r.get(q)]
            if not peers:
                continue
            best, peer = min(peers)
            out += [{"function": function, "quantity": q, "method": r["key"],
                     "ulps": r[q]["max"], "best": best, "peer": peer}
                    for r in rows if r["key"] in ours and r.get(q)
                    and printed(r[q]["max"]) > printed(best)]
    return out


def fmt_ulps(v: float | None) -> str:
    """An error in ulps for a table: ``0.5``, ``12``, ``3.4e+05``, ``inf``; ``-`` for none."""
    if v is None:
        return "-"
    if not math.isfinite(v):
        return "inf"
    if v < 10:
        return f"{v:.2g}" if v >= 0.01 else "0" if v == 0 else f"{v:.1g}"
    return f"{v:.0f}" if v < 1e4 else f"{v:.1e}"


def cell(s: dict[str, Any] | None, with_x: bool = True) -> str:
    """``max / p99 at x``."""
    if s is None:
        return "-"
    text = f"{fmt_ulps(s['max'])} / {fmt_ulps(s['p99'])}"
    return f"{text} at {s['x']:.3g}" if with_x and s["max"] > 0 else text


def rows(records: list[dict[str, Any]]) -> list[list[str]]:
    """The full table: one row per function and method."""
    head = ["function", "method", "value", "first derivative", "second derivative", "note"]
    return [head] + [[r["function"], r["method"], cell(r["value"]), cell(r["d1"]),
                      cell(r["d2"]), r["note"]] for r in records]


SUMMARY_METHODS = ("reverse", "forward", "compiled", "jax", "torch", "autograd", "central",
                   "complex")


def summary(records: list[dict[str, Any]]) -> list[list[str]]:
    """The compact table of docs/accuracy.md: per function, each method's max ulps of
    value / first / second derivative (``-``: not computed, or nothing counted)."""
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in records:
        by.setdefault(r["function"], {})[r["key"]] = r
    present = [m for m in SUMMARY_METHODS if any(m in v for v in by.values())]
    head = ["function"] + [METHODS[m] for m in present]
    out = [head]
    for name, per in by.items():
        row = [name]
        for m in present:
            r = per.get(m)
            if r is None:
                row.append("")
            elif all(r[q] is None for q in QUANTITIES) and r["note"]:
                row.append("n/a")
            else:
                row.append(" / ".join(fmt_ulps(r[q]["max"]) if r[q] else "-"
                                      for q in (QUANTITIES if m not in ("central", "complex")
                                                else ("d1",))))
        out.append(row)
    return out


def markdown(table: list[list[str]]) -> str:
    esc = [[c.replace("|", "\\|") for c in row] for row in table]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc[1:]])


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m diffkit.bench.atlas [--markdown] [--points N] [NAME ...]``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m diffkit.bench.atlas",
                                description="errors in ulps against mpmath (docs/accuracy.md)")
    p.add_argument("names", nargs="*")
    p.add_argument("--markdown", action="store_true", help="the summary table of docs/accuracy.md")
    p.add_argument("--points", type=int, default=400)
    args = p.parse_args(argv)
    records = atlas(args.names, n=args.points)
    print(markdown(summary(records) if args.markdown else rows(records)))


if __name__ == "__main__":
    main()
