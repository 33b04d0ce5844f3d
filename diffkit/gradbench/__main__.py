"""``python -m diffkit.gradbench``: diffkit as a GradBench tool, or a GradBench eval run here.

As a tool (GradBench's ``--tool``), answering the eval's messages on stdin, on stdout::

    python -m diffkit.gradbench --backend reverse
    ./gradbench run --eval "./gradbench repo eval gmm" --tool "python -m diffkit.gradbench"

Running an eval in this process (GradBench's inputs for the named sizes, each output
validated against the hand-derived gradient), one line per evaluate::

    python -m diffkit.gradbench --backend forward --eval gmm --size 2_5_1000 --min-seconds 0
    python -m diffkit.gradbench --list                  # the evals, functions and sizes

A mistake (an unknown backend, eval, function or size) is one line on stderr, exit
status 2; with ``--eval``, the status is 1 when an evaluation fails or is invalid.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from ..core import DiffkitError
from . import EVALS
from .protocol import WARMUP, ProtocolError, Tool, drive, serve

PROG = "python -m diffkit.gradbench"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(message)


def fail(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parser() -> Parser:
    p = Parser(prog=PROG, description="diffkit as a GradBench tool (the protocol on stdin and "
               "stdout), or with --eval a GradBench eval run in this process.")
    p.add_argument("--backend", default="reverse",
                   help="how to differentiate: forward, reverse, compiled, numeric, or a spec "
                        "such as 'compiled[fuse=false]' (default: reverse)")
    p.add_argument("--warmup", choices=WARMUP, default="auto",
                   help="call the function once before the timed runs, reported as a 'warmup' "
                        "timing; auto: for a backend that compiles (default: auto)")
    p.add_argument("--list", action="store_true", help="list the evals, functions and sizes")
    run = p.add_argument_group("running an eval here")
    run.add_argument("--eval", help=f"the eval to run ({', '.join(EVALS)})")
    run.add_argument("--size", action="append",
                     help="a size as GradBench names it, e.g. 2_5_1000 for gmm (repeatable; "
                          "default: every size)")
    run.add_argument("--function", action="append",
                     help="a function of the eval (repeatable; default: all)")
    run.add_argument("--min-runs", type=int, default=1, help="default: 1")
    run.add_argument("--min-seconds", type=float, default=1.0, help="default: 1")
    run.add_argument("--no-validation", action="store_true",
                     help="do not check outputs against the hand-derived reference")
    run.add_argument("--log", help="write the session (GradBench's log format) to this file")
    return p


def listing() -> str:
    return "\n".join(f"{ev.name}: {', '.join(ev.functions)} — {ev.summary}\n"
                     f"  sizes: {' '.join(ev.sizes)}" for ev in EVALS.values())


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.list:
        print(listing())
        return 0
    try:
        tool = Tool(args.backend, warmup=args.warmup)
    except DiffkitError as e:
        fail(str(e))
    if args.eval is None:
        for option in ("size", "function", "log"):
            if getattr(args, option) is not None:
                fail(f"--{option} needs --eval")
        try:
            serve(tool, sys.stdin, sys.stdout)
        except ProtocolError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # the eval went away
            return 0
        return 0
    try:
        ev = tool.eval(args.eval)
        sizes = args.size or list(ev.sizes)
        for size in sizes:
            if size not in ev.sizes:
                raise DiffkitError(f"unknown size {size!r} for {ev.name}; its sizes are "
                                   f"{', '.join(ev.sizes)}")
        for function in args.function or ():
            ev.check_function(function)
    except DiffkitError as e:
        fail(str(e))
    if args.min_runs < 1 or args.min_seconds < 0:
        fail("--min-runs must be >= 1 and --min-seconds >= 0")
    try:
        log = open(args.log, "w") if args.log else None
    except OSError as e:
        fail(f"cannot write the log {args.log!r}: {e.strerror}")
    try:
        ok = drive(tool, ev, sizes, args.function or ev.functions, args.min_runs,
                   args.min_seconds, not args.no_validation, log,
                   lambda line: print(line, flush=True))
    finally:
        if log is not None:
            log.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
