"""GradBench's protocol: diffkit as a GradBench tool, and an eval driver to run one here.

The eval sends one JSON message per line and waits for the tool's response line, which
carries the message's ``id``:

* ``start`` → ``{"id", "tool": "diffkit", "config": {...}}``;
* ``define`` a module → ``"success": true`` if diffkit implements that eval, else
  ``"success": false`` with an ``"error"`` (the eval then stops);
* ``evaluate`` a module's function at an ``input`` → ``"success": true``, the ``"output"``
  and ``"timings"``, or ``"success": false`` and an ``"error"`` (an unknown function, an
  input not of the eval's form, a backend that fails). The function is run at least
  ``min_runs`` times and until the runs add up to ``min_seconds``, each run timed alone
  (the call only: converting the JSON input to arrays and the output back is not timed)
  and reported as one ``{"name": "evaluate", "nanoseconds": ...}`` timing;
* ``analysis`` (the eval's verdict on an output) and any other kind → ``{"id"}``;
* ``end`` (which GradBench's Python eval sends without waiting for an answer) → none;
  the tool stops, as it does at the end of its input.

A backend that stages (``compiled``: one program per shapes) is, by default, called once
before the timed runs and that call is reported as a ``"warmup"`` timing, so that the
``evaluate`` timings are of the program, not of building it (``warmup="never"`` times
the first call with the others, as a JIT-compiling tool's first run is timed).

>>> tool = Tool("reverse")
>>> tool.respond({"id": 0, "kind": "define", "module": "lse"})
{'id': 0, 'success': True}
>>> r = tool.respond({"id": 1, "kind": "evaluate", "module": "lse", "function": "gradient",
...                   "input": {"x": [0.0, 0.0], "min_runs": 2, "min_seconds": 0}})
>>> r["success"], r["output"], [t["name"] for t in r["timings"]]
(True, [0.5, 0.5], ['evaluate', 'evaluate'])
>>> tool.respond({"id": 2, "kind": "evaluate", "module": "lse", "function": "hessian",
...               "input": {"x": [0.0]}})["error"]
"lse has no function 'hessian'; its functions are primal, gradient"
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from .. import __version__
from ..backends import Backend, as_backend, label
from ..core import DiffkitError
from . import EVALS
from .common import Eval, Runner

WARMUP = ("auto", "always", "never")


class ProtocolError(DiffkitError):
    """A line that is not a protocol message: the session cannot go on."""


def one_line(error: BaseException) -> str:
    """An exception as one line: diffkit's own errors by their message, others with
    their type."""
    text = " ".join(str(error).split()) or "(no message)"
    return text if isinstance(error, DiffkitError) else f"{type(error).__name__}: {text}"


class Tool:
    """diffkit as a GradBench tool, differentiating with ``backend``.

    :meth:`respond` answers one message (a dict) with its response (a dict), or None for
    ``end``. A function is built once per eval and function (a compiled backend keeps its
    programs across evaluations of the same shapes).
    """

    def __init__(self, backend: str | Backend = "reverse", evals: dict[str, Eval] | None = None,
                 warmup: str = "auto", clock: Callable[[], int] = time.perf_counter_ns) -> None:
        if warmup not in WARMUP:
            raise DiffkitError(f"warmup must be one of {', '.join(WARMUP)}, got {warmup!r}")
        self.backend = as_backend(backend)
        self.evals = EVALS if evals is None else evals
        self.warmup = warmup == "always" or (
            warmup == "auto" and type(self.backend).stage is not Backend.stage)
        self.clock = clock
        self.runners: dict[tuple[str, str], Runner] = {}
        self.analyses: dict[Any, dict[str, Any]] = {}  # id of an evaluate -> its analysis

    def respond(self, message: dict[str, Any]) -> dict[str, Any] | None:
        kind = message.get("kind")
        if kind == "end":
            return None
        response: dict[str, Any] = {"id": message["id"]}
        if kind == "start":
            response |= {"tool": "diffkit", "config": self.config()}
        elif kind == "define":
            response |= self.define(message.get("module"))
        elif kind == "evaluate":
            response |= self.evaluate(message.get("module"), message.get("function"),
                                      message.get("input"))
        elif kind == "analysis":
            self.analyses[message.get("of")] = message
        return response

    def config(self) -> dict[str, Any]:
        return {"backend": label(self.backend), "warmup": self.warmup, "diffkit": __version__}

    def eval(self, module: Any) -> Eval:
        if module not in self.evals:
            raise DiffkitError(f"diffkit has no eval {module!r}; it implements "
                               f"{', '.join(self.evals)}")
        return self.evals[module]

    def define(self, module: Any) -> dict[str, Any]:
        try:
            self.eval(module)
        except DiffkitError as e:
            return {"success": False, "error": one_line(e)}
        return {"success": True}

    def evaluate(self, module: Any, function: Any, input: Any) -> dict[str, Any]:
        try:
            ev = self.eval(module)
            ev.check_function(function)
            min_runs, min_seconds = runs(input)
            static, arrays = ev.prepare(input)
            run = self.runners.get((ev.name, function))
            if run is None:
                run = self.runners[(ev.name, function)] = ev.build(function, self.backend)
            timings = []
            if self.warmup:
                start = self.clock()
                run(static, *arrays)
                timings.append({"name": "warmup", "nanoseconds": self.clock() - start})
            total, count = 0, 0
            while count < min_runs or total < min_seconds * 1e9:
                start = self.clock()
                result = run(static, *arrays)
                spent = self.clock() - start
                timings.append({"name": "evaluate", "nanoseconds": spent})
                total, count = total + spent, count + 1
            output = ev.output(function, result)
            json.dumps(output, allow_nan=False)
        except ValueError as e:
            if "JSON compliant" in str(e):
                return {"success": False, "error": "the output is not finite (NaN or infinity)"}
            return {"success": False, "error": one_line(e)}
        except Exception as e:  # (MemoryError too) a failed evaluation is a response, not a crash
            return {"success": False, "error": one_line(e)}
        return {"success": True, "output": output, "timings": timings}


def runs(input: Any) -> tuple[int, float]:
    """``(min_runs, min_seconds)`` of an input (GradBench's ``Runs``): at least one run
    (one, for an input that is not an object: ``hello``'s numbers)."""
    if not isinstance(input, dict):
        return 1, 0.0
    min_runs, min_seconds = input.get("min_runs", 1), input.get("min_seconds", 0)
    for name, value in (("min_runs", min_runs), ("min_seconds", min_seconds)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise DiffkitError(f"field {name!r} must be a number >= 0, got {value!r}")
    return max(1, int(min_runs)), float(min_seconds)


def messages(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The messages of an eval's output, one JSON object per line (blank lines skipped)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as e:
            raise ProtocolError(f"line {number} is not JSON ({e.msg}): {line.strip()[:80]}"
                                ) from None
        if not isinstance(message, dict) or "id" not in message or "kind" not in message:
            raise ProtocolError(f"line {number} is not a message (an object with an id and a "
                                f"kind): {line.strip()[:80]}")
        yield message


def serve(tool: Tool, stdin: IO[str], stdout: IO[str]) -> None:
    """Answer every message of ``stdin`` on ``stdout``, one line each, until ``end`` or the
    end of the input. Anything else that writes to ``sys.stdout`` meanwhile goes to
    ``sys.stderr``: the protocol's channel carries responses only."""
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        for message in messages(stdin):
            response = tool.respond(message)
            if response is None:
                return
            stdout.write(json.dumps(response, allow_nan=False) + "\n")
            stdout.flush()
    finally:
        sys.stdout = saved


# --------------------------------------------------------------------------- the eval's side


def session(ev: Eval, sizes: Iterable[str], functions: Iterable[str], min_runs: int = 1,
            min_seconds: float = 1.0, validate: bool = True) -> Iterator[dict[str, Any]]:
    """The messages GradBench's eval ``ev`` sends (start, define, then per size each
    function's evaluate), as a generator that receives each response (``send``) and
    answers an evaluate with its analysis against the hand-derived reference."""
    functions = tuple(functions)
    ids = iter(range(1 << 62))
    yield {"id": next(ids), "kind": "start", "eval": ev.name}
    defined = yield {"id": next(ids), "kind": "define", "module": ev.name}
    if not defined.get("success"):
        return
    for size in sizes:
        input = ev.input(size)
        for function in functions:
            runs = {"min_runs": min_runs, "min_seconds": min_seconds}
            message = {"id": next(ids), "kind": "evaluate", "module": ev.name,
                       "function": function,
                       "input": input | runs if isinstance(input, dict) else input,
                       "description": size}
            response = yield message
            if response.get("success") and validate:
                found = ev.validate(function, input, response["output"])
                analysis = {"id": next(ids), "kind": "analysis", "of": message["id"],
                            "valid": not found}
                if found:
                    analysis["error"] = (f"found {len(found)} mismatches, showing "
                                         f"{min(len(found), 10)}: " + "; ".join(found[:10]))
                yield analysis


def drive(tool: Tool, ev: Eval, sizes: Iterable[str], functions: Iterable[str],
          min_runs: int = 1, min_seconds: float = 1.0, validate: bool = True,
          log: IO[str] | None = None, report: Callable[[str], None] = print) -> bool:
    """Run eval ``ev`` against ``tool`` in this process: ``report`` one line per
    evaluate (its mean time per run and verdict), the session in GradBench's log format
    to ``log`` (``{"elapsed", "message"}`` / ``{"elapsed", "response"}`` lines). True
    when every evaluation succeeded and every analysis found it valid."""
    begin, ok, line = time.perf_counter_ns(), True, None

    def write(key: str, value: dict[str, Any]) -> None:
        if log is not None:
            elapsed = {"nanoseconds": time.perf_counter_ns() - begin}
            log.write(json.dumps({"elapsed": elapsed, key: value}) + "\n")

    steps = session(ev, sizes, functions, min_runs, min_seconds, validate)
    response: Any = None
    while True:
        try:
            message = next(steps) if response is None else steps.send(response)
        except StopIteration:
            break
        write("message", message)
        response = tool.respond(message)
        write("response", response)
        if message["kind"] == "define" and not response.get("success"):
            report(f"[{message['id']}] def {ev.name}: {response.get('error')}")
            return False
        if message["kind"] == "evaluate":
            line = summary(message, response)
            ok = ok and bool(response.get("success"))
            if not (response.get("success") and validate):
                report(line if not response.get("success") else f"{line} (not validated)")
                line = None
        elif message["kind"] == "analysis" and line is not None:
            report(f"{line} valid" if message["valid"]
                   else f"{line} INVALID: {message.get('error', '')}")
            ok, line = ok and message["valid"], None
    return ok


def summary(message: dict[str, Any], response: dict[str, Any]) -> str:
    """One evaluate as a line: id, module::function, size, mean time per run, runs."""
    head = f"[{message['id']}] {message['module']}::{message['function']} {message['description']}"
    if not response.get("success"):
        return f"{head} failed: {response.get('error', '')}"
    times = [t["nanoseconds"] for t in response["timings"] if t["name"] == "evaluate"]
    warm = [t["nanoseconds"] for t in response["timings"] if t["name"] == "warmup"]
    mean = sum(times) / len(times)
    extra = f", warmup {_seconds(warm[0])}" if warm else ""
    return f"{head} {_seconds(mean)} per run ({len(times)} runs{extra})"


def _seconds(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"
