"""``advise``: how should I differentiate this function? Answered from measurements.

A few seconds of probing on the user's own function: its numbers of inputs ``n`` and
outputs ``m``, the cost of one call, whether automatic differentiation can trace it
(a black box that calls plain numpy cannot be), whether it is noisy or has a kink near
the point; then each way of differentiating that fits in the time budget is run once
in an isolated cell (setup, per-call time, size, memory), and its error is measured
against the high-precision reference (:mod:`diffkit.bench.reference`, which shares no
derivative rule with the backends); where there is none (a black box, no closed form),
it is estimated by comparing methods, and the advice says so. The recommendation is the cheapest method
whose error meets ``accuracy``, counting setup over ``calls`` calls, with the runner-up
and the reasons in sentences tied to the figures (the rules of the AD literature:
n vs m, the cheap-gradient principle, truncation vs round-off, expression swell, tape
memory).

>>> import diffkit as dk
>>> a = dk.advise("rosenbrock", n=500)   # n inputs, 1 output: the cheap-gradient case
>>> a.best.method in ("reverse", "compiled")  # reverse mode: eager, or compiled once it pays
True
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..backends import backend, backends, parse_spec
from ..backends import symbolic  # noqa: F401  (SymPy loads once here, not inside a cell's time limit)
from ..backends import compiled  # noqa: F401  (likewise the code generator: setup_s is the build)
from ..core import DiffkitError
from . import advise_coloring
from .cells import run_isolated
from .harness import compare, size_text
from .iterative import PROBLEMS, advise_way
from .measure import TRANSFORMS, error_against
from .probes import peak_bytes, timed
from .reference import reference
from .targets import Target, find_target, kind_for
from .verdict import point_text

AD = ("reverse", "forward", "compiled")
EPS = float(np.finfo(float).eps)
SYMBOLIC_INPUTS = 400  # above this many inputs, symbolic setup is not tried within advise
NOISE = 1.25  # costs this close are a tie on a shared machine
CLOSE = 3.0  # the two cheapest this close are measured again (one timing can be 3x off under load)
NUMERIC = ("numeric[method=central]", "numeric[method=richardson]", "numeric[method=complex]",
           "numeric[method=forward]")


def methods() -> list[str]:
    """Every method advise weighs (the compiled backend when it is registered)."""
    return [m for m in AD if m in backends()] + ["symbolic"] + list(NUMERIC)


@dataclass
class Candidate:
    """One way of differentiating, as probed: measured or predicted figures, or why not."""

    method: str
    status: str = "ok"  # ok | n/a | skipped | timeout | error
    note: str = ""
    setup_s: float = 0.0
    time_s: float | None = None
    error: float | None = None
    error_basis: str = ""
    peak_bytes: int | None = None
    size: str = ""
    measured: bool = True
    derivative: Any = field(default=None, repr=False)

    def cost(self, calls: int) -> float:
        """Seconds per call with setup spread over ``calls`` calls."""
        return self.setup_s / calls + (self.time_s or math.inf)


@dataclass
class Advice:
    """The probes, every candidate, the recommendation and its reasons (``str()`` reads it)."""

    function: str
    kind: str
    n: int
    m: int
    f_time_s: float
    accuracy: float
    calls: int
    facts: dict[str, Any]
    candidates: list[Candidate]
    best: Candidate | None
    runner_up: Candidate | None
    reasons: list[str]
    verified: list[dict[str, Any]] | None = None

    def records(self) -> dict[str, Any]:
        """Plain data (JSON-ready)."""
        def plain(c: Candidate | None) -> dict | None:
            return None if c is None else {k: v for k, v in asdict(c).items() if k != "derivative"}
        return {"function": self.function, "kind": self.kind, "n": self.n, "m": self.m,
                "f_time_s": self.f_time_s, "accuracy": self.accuracy, "calls": self.calls,
                "facts": self.facts, "candidates": [plain(c) for c in self.candidates],
                "best": plain(self.best), "runner_up": plain(self.runner_up),
                "reasons": self.reasons, "verified": self.verified}

    def to_json(self) -> str:
        return json.dumps(self.records(), default=str)

    def __str__(self) -> str:
        lines = [f"{self.function}: {self.kind}, n = {self.n} input(s), m = {self.m} output(s), "
                 f"f takes {_secs(self.f_time_s)}"]
        if self.best is None:
            lines.append("No method meets the target here.")
        else:
            pays = self.facts.get("compiled_pays_after")
            lines.append(f"Recommended: {self.best.method} — error {_err(self.best.error)}, "
                         f"{_secs(self.best.time_s)} per call"
                         + (f" after {_secs(self.best.setup_s)} setup" if self.best.setup_s else "")
                         + (f"; compiled if you call it more than ~{pays} times"
                            if pays and self.best.method != "compiled" else ""))
            if self.runner_up is not None:
                lines.append(f"Runner-up:   {self.runner_up.method} — error "
                             f"{_err(self.runner_up.error)}, {_secs(self.runner_up.time_s)} per call")
        lines += ["Why:"] + [f"  - {r}" for r in self.reasons]
        if self.verified:
            lines.append("Verified (isolated cells, high-precision reference):")
            for v in self.verified:
                lines.append(f"  {v['method']}: predicted error {_err(v['predicted_error'])}, "
                             f"measured {_err(v['measured_error'])}; predicted "
                             f"{_secs(v['predicted_time_s'])}, measured {_secs(v['measured_time_s'])}"
                             + (f" ({v['status']}: {v['message']})" if v["status"] != "ok" else ""))
        return "\n".join(lines)

    def table(self) -> list[list[str]]:
        """Header and one row per candidate (display strings); the notes, sentences, are
        :meth:`notes` (under the table, so no column cuts them)."""
        rows = [["method", "status", "error", "setup", "per call", f"cost/{self.calls} calls",
                 "memory", "size"]]
        for c in self.candidates:
            rows.append([c.method, c.status if c.measured or c.status != "ok" else "predicted",
                         _err(c.error), _secs(c.setup_s) if c.setup_s else "—", _secs(c.time_s),
                         _secs(c.cost(self.calls) * self.calls) if c.time_s else "—",
                         _bytes(c.peak_bytes), c.size or "—"])
        return rows

    def notes(self) -> list[str]:
        """One line per candidate that carries a note: why it was predicted, skipped or
        failed."""
        return [f"{c.method}: {c.note}" for c in self.candidates if c.note]


def _secs(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "—"
    for unit, k in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= k:
            return f"{s / k:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _err(e: float | None) -> str:
    return "—" if e is None or not math.isfinite(e) else f"{e:.1e}"


def _bytes(b: int | None) -> str:
    return "—" if not b else f"{b / 2**20:.3g} MB" if b >= 2**20 else f"{b / 2**10:.3g} kB"


# --------------------------------------------------------------------------- probes


def _ad_trace(t: Target) -> tuple[bool, str]:
    """Can automatic differentiation trace f? (A black box calling plain numpy cannot.)"""
    from ..transforms.functional import jvp

    try:
        jvp(t.f, (t.x,), (np.ones_like(t.x),))
        return True, ""
    except (DiffkitError, TypeError) as exc:
        return False, str(exc).splitlines()[0]


def _noise(t: Target) -> float:
    """Relative noise level of f along a direction, from a difference table: the 4th
    differences at a tiny step are pure noise for a smooth f (Hamming; Moré & Wild)."""
    x = np.asarray(t.x, dtype=float)
    v = np.random.default_rng(0).standard_normal(x.shape)
    h = 1e-7 * (1.0 + float(np.max(np.abs(x))))
    g = np.array([np.sum(np.asarray(t.f(x + k * h * v), dtype=float)) for k in range(-4, 5)])
    d4 = np.diff(g, 4)
    scale = max(float(np.max(np.abs(g))), 1e-300)
    return float(np.sqrt(np.mean(d4 ** 2) / math.comb(8, 4))) / scale


def _kink(t: Target) -> bool:
    """Is there a corner near x? Forward and backward difference slopes differ by about
    h·f'' on a smooth function, a gap that shrinks with h; at a kink it stays."""
    x = np.asarray(t.x, dtype=float)
    v = np.random.default_rng(1).standard_normal(x.shape)
    scale = 1.0 + float(np.max(np.abs(x)))

    def gap(h: float) -> float:
        fs = [float(np.sum(np.asarray(t.f(x + s * h * v), dtype=float))) for s in (-1, 0, 1)]
        return abs((fs[2] - fs[1]) - (fs[1] - fs[0])) / h

    coarse, fine = gap(1e-3 * scale), gap(1e-5 * scale)
    return fine > 0.3 * coarse and fine > 1e-6 * (1.0 + abs(float(np.sum(np.asarray(t.f(x))))))


# --------------------------------------------------------------------------- candidates


def _measure(t: Target, kind: str, spec: str, timeout: float, memory_mb: float | None
             ) -> Candidate:
    """Run one method once in an isolated cell: setup, per-call time, peak memory, size."""
    def job() -> dict:
        be = backend(spec)
        diff = TRANSFORMS[kind](t.f, backend=be)
        d = diff(t.x)  # setup (compile, derive) happens here, outside tracemalloc's slowdown
        # the least of five timings: other processes only ever add time
        per_call = min(timed(lambda: diff(t.x), repeat=1, min_time=0.005)[0] for _ in range(5))
        return {"status": "ok", "derivative": np.asarray(d, dtype=float), "time_s": per_call,
                "peak_bytes": peak_bytes(lambda: diff(t.x)), "stats": be.stats(t.f, t.x)}

    out = run_isolated(job, timeout=timeout, memory_mb=memory_mb)
    if out.get("status") != "ok":
        status = out.get("status", "error")  # n/a: the method raised NotApplicable
        message = out.get("message", "")
        return Candidate(spec, status=status, note=message.splitlines()[0] if message else status)
    stats = out.get("stats") or {}
    size = size_text({"backend": parse_spec(spec)[0], **stats})
    return Candidate(spec, setup_s=float(stats.get("setup_s") or 0.0),
                     time_s=out["time_s"], peak_bytes=out["peak_bytes"], size=size,
                     derivative=out["derivative"])


def _duel(t: Target, kind: str, a: Candidate, b: Candidate, timeout: float,
          memory_mb: float | None) -> None:
    """A close call measured again: both methods in one cell, their timings interleaved so
    that both see the same load; each keeps the least of its per-call times and setups."""
    def job() -> dict:
        bes = [backend(c.method) for c in (a, b)]
        diffs = [TRANSFORMS[kind](t.f, backend=be) for be in bes]
        setups = []
        for be, diff in zip(bes, diffs):
            diff(t.x)
            setups.append(float(be.stats(t.f, t.x).get("setup_s") or 0.0))
        times: list[list[float]] = [[], []]
        for _ in range(5):
            for k, diff in enumerate(diffs):
                times[k].append(timed(lambda: diff(t.x), repeat=1, min_time=0.005)[0])
        return {"status": "ok", "times": [min(ts) for ts in times], "setups": setups}

    out = run_isolated(job, timeout=timeout, memory_mb=memory_mb)
    if out.get("status") == "ok":
        for c, t_s, s_s in zip((a, b), out["times"], out["setups"]):
            c.time_s, c.setup_s = min(c.time_s, t_s), min(c.setup_s, s_s)


def _evaluations(spec: str, n: int) -> int:
    """Evaluations of f (or its cost in them) one derivative by ``spec`` takes, n inputs."""
    return {"forward": n, "numeric[method=central]": 2 * n + 1,
            "numeric[method=richardson]": 8 * n + 1, "numeric[method=complex]": n,
            "numeric[method=forward]": n + 1}.get(spec, 1)


def _predicted(spec: str, n: int, f_time: float, why: str) -> Candidate:
    """A method too slow to run here: its cost from the evaluation count."""
    return Candidate(spec, status="ok", note=why, measured=False,
                     time_s=_evaluations(spec, n) * f_time * 2.0)


def _calls(k: int) -> str:
    return f"{k} call" if k == 1 else f"{k} calls"


def advise(f: str | Callable, x: Any = None, *, at: dict[str, Any] | None = None,
           n: int | None = None, depth: int | None = None, calls: int = 100,
           accuracy: float = 1e-8, memory_bytes: float | None = None, budget_s: float = 8.0,
           verify: bool = False) -> Advice:
    """Probe ``f`` at ``x`` and recommend how to differentiate it (see the module docstring).

    ``calls``: how many derivative calls setup is spread over; ``accuracy``: the relative
    error a method must meet; ``memory_bytes``: a limit on one call's peak memory;
    ``verify``: measure the recommendation and the runner-up against a high-precision
    reference in isolated cells (the ``compare`` machinery) and report both.
    """
    if calls < 1 or not accuracy > 0:
        raise DiffkitError("advise: calls must be ≥ 1 and accuracy > 0, e.g. --calls 100 "
                           "--accuracy 1e-8")
    t = find_target(f, at=at, n=n, depth=depth, x=x)
    started = time.perf_counter()
    try:
        y = t.f(t.x)
    except Exception as exc:  # the user's function: blame it, in one line (as compare does)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise DiffkitError(f"the function itself failed at x = {point_text(t.x)}: "
                           f"{type(exc).__name__}: {first}"[:300]) from None
    kind = t.kind or kind_for(t.x, y)
    n_in, m_out = int(np.size(t.x)), int(np.size(y))
    f_time, _ = timed(lambda: t.f(t.x), repeat=3, min_time=0.01)
    traceable, why_not = _ad_trace(t)
    facts: dict[str, Any] = {"ad_traceable": traceable, "noise": _noise(t),
                             "numba": importlib.util.find_spec("numba") is not None,
                             "peers": [b for b in backends() if b not in (
                                 "forward", "reverse", "symbolic", "numeric", "compiled")]}
    if not traceable:
        facts["ad_reason"] = why_not
    else:
        tape = backend("reverse").stats(t.f, t.x)
        facts["tape_ops"], facts["tape_bytes"] = tape["tape_ops"], tape["tape_bytes"]
    candidates: list[Candidate] = []
    per_cell = max(1.0, min(3.0, budget_s / 4))
    memory_mb = None if memory_bytes is None else memory_bytes / 2**20 * 4 + 256
    for spec in methods():
        name = parse_spec(spec)[0]
        if name in AD + ("symbolic",) and not traceable:
            candidates.append(Candidate(spec, status="n/a", note=f"cannot trace f: {why_not}"))
            continue
        if spec == "symbolic" and n_in > SYMBOLIC_INPUTS:
            candidates.append(Candidate(spec, status="skipped", note=(
                f"not run: SymPy would derive {n_in} partial derivatives (more than "
                f"{SYMBOLIC_INPUTS}), minutes of setup; measure it with diffkit compare")))
            continue
        evals = _evaluations(spec, n_in)
        if evals * f_time > 1.0 or (kind == "grad" and spec == "forward" and n_in > 2000):
            candidates.append(_predicted(spec, n_in, f_time, f"predicted from {evals} evaluations"
                                         " of f (too slow to run here)"))
            continue
        remaining = budget_s - (time.perf_counter() - started)
        if remaining < 0.5:
            candidates.append(_predicted(spec, n_in, f_time, "not run: advise's time budget "
                                         "was spent"))
            continue
        candidates.append(_measure(t, kind, spec, min(per_cell, remaining), memory_mb))
    if traceable:
        candidates += [Candidate(**c) for c in
                       advise_coloring.candidates(t, kind, per_cell, memory_mb, facts)]
    exact, facts["reference"] = _reference(t, kind, max(5.0, budget_s))
    _estimate_errors(candidates, exact)
    facts["kink_near_x"] = _kink(t)
    if t.name in PROBLEMS:  # a solver: its ways of differentiating (implicit, adjoints ...)
        facts["solver_ways"], facts["solver_advice"] = advise_way(t.name, accuracy, memory_bytes)
    fits = [c for c in candidates if c.status == "ok" and c.error is not None
            and c.error <= accuracy and c.time_s is not None
            and (memory_bytes is None or (c.peak_bytes or 0) <= memory_bytes)]
    # an exact method (AD, symbolic) within timing noise of finite differences is the safer advice
    def rank(c: Candidate) -> float:
        return c.cost(calls) / (1.0 if c.method.startswith("numeric") else NOISE)

    fits.sort(key=rank)
    if len(fits) > 1 and rank(fits[1]) <= CLOSE * rank(fits[0]) and \
            {fits[0].method, fits[1].method} <= set(methods()):  # (backends: a coloured one is not)
        _duel(t, kind, fits[0], fits[1], per_cell, memory_mb)
        fits.sort(key=rank)
        facts["remeasured"] = [c.method for c in fits[:2]]
    facts["exact_within_noise"] = bool(fits) and not fits[0].method.startswith("numeric") and \
        min(c.cost(calls) for c in fits) < fits[0].cost(calls)
    best = fits[0] if fits else None
    runner = fits[1] if len(fits) > 1 else None
    facts["compiled_pays_after"] = _break_even(fits)
    advice = Advice(t.name, kind, n_in, m_out, f_time, accuracy, calls, facts, candidates, best,
                    runner, [])
    advice.reasons = _reasons(advice)
    if verify and best is not None:
        chosen = [c for c in (best, runner) if c is not None and c.method in methods()]
        result = compare(f, *(() if isinstance(f, str) else (t.x,)), at=at, n=n, depth=depth,
                         backends=[c.method for c in chosen], repeat=3)
        advice.verified = [
            {"method": c.method, "status": row.get("status"), "message": row.get("message"),
             "predicted_error": c.error, "measured_error": row.get("error"),
             "predicted_time_s": c.time_s, "measured_time_s": row.get("time_s")}
            for c, row in zip(chosen, result.rows)]
    return advice


def _break_even(fits: list[Candidate]) -> int | None:
    """After how many calls compiling pays: the compiled backend's measured setup over the
    per-call time it saves against the cheapest other method meeting the target (None when
    it saves nothing per call or does not meet the target).

    >>> _break_even([Candidate("reverse", time_s=1e-3),
    ...              Candidate("compiled", setup_s=0.05, time_s=2e-4)])
    63
    """
    comp = next((c for c in fits if c.method == "compiled"), None)
    others = [c for c in fits if c.method != "compiled" and c.time_s is not None]
    if comp is None or comp.time_s is None or not others:
        return None
    eager = min(others, key=lambda c: c.time_s)
    saved = eager.time_s - comp.time_s
    return max(1, math.ceil((comp.setup_s - eager.setup_s) / saved)) if saved > 0 else None


def _reference(t: Target, kind: str, timeout: float) -> tuple[Any, str]:
    """The 40-digit reference derivative (independent of every backend's rules) and how it
    was had, or ``None`` and why not (no closed form, too slow), in an isolated cell."""
    def job() -> dict:
        r = reference(t.f, t.x, kind)
        return {"derivative": np.asarray(r.derivative, dtype=float), "method": r.method}

    out = run_isolated(job, timeout=timeout)
    if out.get("status") != "ok":
        why = {"timeout": f"it took longer than {timeout:g} s"}.get(out["status"], out.get(
            "message", "").split(": ", 1)[-1] or out["status"])
        return None, f"none ({why})"
    return out["derivative"], out["method"]


def _estimate_errors(candidates: list[Candidate], exact: Any = None) -> None:
    """Error of each measured derivative against the high-precision reference ``exact``.
    Without one (no closed form), estimates that say so: AD methods by their agreement
    with each other (not a measured error), the others against an AD one, or for a black
    box, central differences against Richardson and Richardson against the complex step
    (each the better method's estimate of the worse one's error)."""
    by = {c.method: c for c in candidates if c.derivative is not None}
    if exact is not None:
        for c in by.values():
            c.error, c.error_basis = error_against(c.derivative, exact)[0], "against the reference"
        return
    ad = [by[m] for m in AD if m in by]
    if ad:
        ref = ad[0].derivative
        for c in by.values():
            if c.method in AD:
                spread = max([error_against(o.derivative, ref)[0] for o in ad] + [0.0])
                c.error = max(spread, 1e-16)
                c.error_basis = "not measured (no reference): the AD methods' agreement"
            else:
                c.error, c.error_basis = error_against(c.derivative, ref)[0], f"against {ad[0].method}"
        return
    order = ["numeric[method=complex]", "numeric[method=richardson]", "numeric[method=central]",
             "numeric[method=forward]"]
    ranked = [by[m] for m in order if m in by]
    for k, c in enumerate(ranked):
        better = ranked[k - 1] if k else (ranked[1] if len(ranked) > 1 else None)
        if better is None:
            continue
        e = error_against(c.derivative, better.derivative)[0]
        c.error, c.error_basis = e, f"estimated against {better.method}"
    if "symbolic" in by and ranked:
        by["symbolic"].error = error_against(by["symbolic"].derivative, ranked[0].derivative)[0]


def _reasons(a: Advice) -> list[str]:
    """The recommendation in sentences, each tied to a measured figure."""
    out: list[str] = []
    c = {x.method: x for x in a.candidates}
    if not a.facts["ad_traceable"]:
        out.append(f"Automatic differentiation cannot trace f ({a.facts['ad_reason']}): only "
                   "finite differences apply, at 2n+1 evaluations for central differences.")
    rev, fwd = c.get("reverse"), c.get("forward")
    if a.facts["ad_traceable"] and rev and rev.time_s and a.f_time_s:
        ratio = rev.time_s / a.f_time_s
        if a.m == 1 and a.n > 1:
            out.append(f"n = {a.n} inputs and m = 1 output: reverse mode gets the whole gradient "
                       f"in one backward pass, {ratio:.3g}× the cost of f (cheap-gradient "
                       f"principle); forward mode needs {a.n} directions"
                       + (f" ({fwd.time_s / a.f_time_s:.3g}× f)." if fwd and fwd.time_s else "."))
        elif a.n <= a.m:
            out.append(f"n = {a.n} input(s) ≤ m = {a.m} outputs: forward mode needs only {a.n} "
                       f"direction(s), reverse mode one backward pass per output.")
        if a.facts.get("tape_bytes"):
            out.append(f"Reverse mode keeps a tape of {a.facts['tape_ops']} operations "
                       f"({_bytes(a.facts['tape_bytes'])} of arrays) until the backward pass.")
    sym = c.get("symbolic")
    if sym is not None and sym.status == "ok" and sym.measured:
        out.append(f"Symbolic: setup {_secs(sym.setup_s)} (derive + compile), then "
                   f"{_secs(sym.time_s)} per call; {sym.size or 'sizes n/a'}.")
    elif sym is not None and sym.status == "skipped":
        out.append(f"Symbolic: {sym.note}.")
    elif sym is not None and sym.status != "ok":
        out.append(f"Symbolic does not apply: {sym.note}.")
    comp, pays = c.get("compiled"), a.facts.get("compiled_pays_after")
    if pays is not None and a.best is not None:
        if a.best.method == "compiled":
            other = a.runner_up.method if a.runner_up else "an eager method"
            out.append(f"Compiled: {_secs(comp.setup_s)} to trace, differentiate and generate "
                       f"code pays off after {_calls(pays)} ({_secs(comp.time_s)} per call); you "
                       f"make {a.calls}." + (f" For fewer than {_calls(pays)} use {other}."
                                             if pays > 1 else ""))
        else:
            out.append(f"Compiled if you call it more than ~{pays} times: "
                       f"compile {_secs(comp.setup_s)} pays off after {_calls(pays)} "
                       f"({_secs(comp.time_s)} per call).")
    elif comp is not None and comp.status == "ok" and comp.time_s and a.best is not None \
            and a.best.method != "compiled":
        out.append(f"Compiled code ({_secs(comp.time_s)} per call after {_secs(comp.setup_s)} "
                   "setup) saves nothing per call here: eager evaluation is as fast.")
    if a.facts.get("reference", "").startswith("none"):
        out.append(f"No high-precision reference here ({a.facts['reference'][6:-1]}): the errors "
                   "are estimates, and the AD methods' is their agreement, not a measurement.")
    out += advise_coloring.reasons(a.facts)
    central = c.get("numeric[method=central]")
    if central is not None and central.error is not None:
        floor = EPS ** (2 / 3)  # the best central differences can do at the best step
        why = ("truncation and round-off together limit them to about eps^(2/3) = "
               f"{_err(floor)}" if central.error <= 10 * floor else
               f"far above their round-off floor eps^(2/3) = {_err(floor)}: truncation "
               "dominates, f's higher derivatives are large next to the step")
        out.append(f"Central differences: error {_err(central.error)} ({central.error_basis}) — "
                   f"{why}.")
    if a.facts["noise"] > 1e-12:
        out.append(f"f is noisy (relative noise ~{a.facts['noise']:.1e}): finite differences "
                   "need a larger step, and every method sees the noise.")
    if a.facts.get("kink_near_x"):
        out.append("f has a kink near x (one-sided slopes differ): derivatives there follow a "
                   "convention (see docs/edge-cases.md).")
    if a.facts.get("solver_advice"):
        out.append(a.facts["solver_advice"])
    if a.best is None:
        ok = [x for x in a.candidates if x.error is not None]
        closest = min(ok, key=lambda x: x.error) if ok else None
        out.append(f"No method met --accuracy {a.accuracy:g}"
                   + (f"; the closest is {closest.method} at {_err(closest.error)}." if closest
                      else ": none could run on f here."))
    elif a.facts.get("exact_within_noise"):
        out.append(f"{a.best.method} meets --accuracy {a.accuracy:g} exactly (to rounding) at "
                   f"{_secs(a.best.cost(a.calls))} per call over {a.calls} calls, within "
                   f"{NOISE:g}× of the cheapest finite differences: a tie on timing, so the "
                   "exact method.")
    else:
        out.append(f"{a.best.method} is the cheapest method meeting --accuracy {a.accuracy:g} "
                   f"over {a.calls} calls ({_secs(a.best.cost(a.calls))} per call, setup "
                   "included).")
    return out
