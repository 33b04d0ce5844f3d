"""Run one measurement in a child process under a time and a memory limit.

A symbolic derivative that swells without bound, a user function that loops forever,
allocates without limit, prints megabytes, crashes the interpreter or kills itself
must not take the sweep down with it: each becomes a record with a ``status``
(``timeout``, ``oom``, ``error``, or ``n/a`` where a backend raised
:class:`~diffkit.core.NotApplicable`) and a one-line ``message``. The child is
forked, so it starts with everything the parent has (including functions defined in
a notebook); its memory limit is on address space (``RLIMIT_AS``), counted on top of
what the process already maps. A job may run isolated cells of its own (the child is not
a daemon); ``memory_mb=None`` leaves their limits to them.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..backends.peers import after_fork
from ..core import NotApplicable


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * resource.getpagesize()


def _die_with_parent() -> None:
    """On Linux, end with the process that forked us (e.g. a cluster worker killed by
    SIGKILL), so that a runaway cell cannot outlive the time limit its parent enforces."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _child(job: Callable[[], dict], conn: Any, memory_mb: float | None) -> None:
    _die_with_parent()
    after_fork()  # the peers whose threads stayed in the parent
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # a chatty user function must not flood the parent's terminal,
    os.dup2(devnull, 2)  # nor its Python-level streams (pytest capture, Jupyter, IDEs)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if memory_mb is not None:
        limit = _mapped_bytes() + int(memory_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        out = {"status": "ok", **job()}
    except MemoryError:
        out = {"status": "oom", "message": f"out of memory (limit {memory_mb:g} MB)"}
    except RecursionError:
        out = {"status": "error", "message": "RecursionError: expression or recursion too deep"}
    except Exception as exc:  # the user's code may raise anything: report it, one line
        lines = [line for line in str(exc).splitlines() if line.strip()] or [""]
        message = f"{type(exc).__name__}: {lines[0].strip()}"[:300]  # first line with text
        out = {"status": "n/a" if isinstance(exc, NotApplicable) else "error", "message": message}
    try:
        conn.send(out)
    except Exception as exc:  # e.g. an unpicklable result
        conn.send({"status": "error", "message": f"result could not be returned: {exc}"})
    conn.close()
    os._exit(0)


def _held_back(fork: Callable[[], None]) -> None:
    """``fork()`` with a Ctrl-C arriving meanwhile handled after it, by the handler there
    was. (Blocking the signal would not do: the kernel hands it to another thread, such
    as a BLAS worker, and Python runs its handler in the main thread all the same.) Only
    the main thread runs Python's signal handlers, so elsewhere nothing is held back."""
    if threading.current_thread() is not threading.main_thread():
        fork()
        return
    caught: list[tuple[int, Any]] = []
    before = signal.signal(signal.SIGINT, lambda *got: caught.append(got))
    try:
        fork()
    finally:
        signal.signal(signal.SIGINT, before)
    if caught and callable(before):
        before(*caught[0])
    elif caught and before == signal.SIG_DFL:
        os.kill(os.getpid(), signal.SIGINT)


def run_isolated(job: Callable[[], dict], timeout: float = 60.0,
                 memory_mb: float | None = 2048) -> dict[str, Any]:
    """``job()``'s dict with ``status: ok``, or a failure record; never raises for the job.

    The parent's heap is frozen while the cell forks: the child's first full garbage
    collection then skips (and does not copy) the parent's objects, a one-off 10-25 ms
    that would land in whichever setup (compiling, deriving) the cell times first.
    Ctrl-C is held back while forking (:func:`_held_back`): a KeyboardInterrupt raised
    inside the fork's handlers (logging's, which release its lock) would leave that lock
    held, and the parent would hang at its next log line instead of stopping."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(job, send, memory_mb))
    try:  # a Ctrl-C even while forking kills the cell (else exit would wait for it)
        gc.freeze()
        try:
            _held_back(proc.start)
        finally:
            gc.unfreeze()
        send.close()
        if recv.poll(timeout):
            try:
                return recv.recv()
            except EOFError:
                pass  # the child died before answering
        else:
            proc.kill()
            proc.join()
            return {"status": "timeout", "message": f"no result within {timeout:g} s"}
    finally:
        send.close()
        recv.close()
        if proc.is_alive():
            proc.kill()
        if proc.pid is not None:
            proc.join()
    code = proc.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory, or killed)" if -code == signal.SIGKILL else ""
        return {"status": "error", "message": f"worker killed by {name}{hint}"}
    return {"status": "error", "message": f"worker exited with code {code} before answering"}
