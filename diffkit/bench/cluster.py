"""Harness cells as tasks on a Dask cluster: ``local:N`` or ``tcp://host:port``.

A sweep too long for one machine runs its cells on Dask's distributed scheduler. Each
task runs on a single-threaded worker (BLAS on one thread) and measures its cells exactly
as a local run does: each in its own forked child under the same time and memory limits
(:func:`diffkit.bench.cells.run_isolated`). Its records gain the worker's ``host``, its
``cpu`` model and ``concurrency``, the cells that machine measures at a time.

The client alone writes results, as tasks finish, so a run interrupted at any point
resumes like a local one. A worker that dies mid-task (SIGKILL, lost connection) has
its task retried once; a second loss records the task's cells as ``lost``, with the
reason, and a rerun measures them again. ``local:N`` starts a ``LocalCluster`` of N
single-threaded worker processes for the run and shuts it down after; N is at most the
number of cores, since more would time contention rather than the cells.

Dask is optional (``pip install diffkit[cluster]``); without it only ``--cluster`` fails.

>>> parse_address("local:2")
('local', 2)
>>> parse_address("tcp://10.0.0.5:8786")
('tcp://10.0.0.5:8786', None)
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core import DiffkitError

Record = dict[str, Any]
T = TypeVar("T")
MISSING = "the cluster needs dask.distributed: pip install diffkit[cluster]"
SCHEMES = ("tcp://", "tls://", "ucx://", "inproc://")
CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler
AHEAD = 10**9  # the priority of a task that goes before every queued job
ONE_THREAD = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def parse_address(address: str) -> tuple[str, int | None]:
    """``("local", N)`` for ``local:N``; ``(address, None)`` for a scheduler's address."""
    if address.startswith("local:"):
        n = address[len("local:"):]
        if n.isdigit() and int(n) > 0:
            return "local", int(n)
    elif address.startswith(SCHEMES) and ":" in address.split("://", 1)[1]:
        return address, None
    raise DiffkitError(f"cluster {address!r}: write local:N (N worker processes on this "
                       "machine) or tcp://host:port (a running Dask scheduler)")


def require(address: str) -> None:
    """Check ``address`` and that dask.distributed is installed, before anything runs."""
    parse_address(address)
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DiffkitError(MISSING) from None


def cpu_model() -> str:
    """This machine's CPU model (``/proc/cpuinfo``), else what :mod:`platform` knows."""
    import platform

    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class Job:
    """Cells measured in one task. ``work`` runs on a worker and returns their records;
    ``stubs`` returns their identity fields (function, backend, …), the records of a
    task that never came back. ``after`` names the keys of jobs to finish first; then
    ``wanted()``, asked on the client, may drop the job (e.g. a smaller size timed out).
    """

    label: str
    work: Callable[[], list[Record]]
    stubs: Callable[[], list[Record]]
    key: Hashable = None
    after: Sequence[Hashable] = ()
    wanted: Callable[[], bool] = field(default=lambda: True)


def _on_worker(work: Callable[[], list[Record]]) -> list[Record]:
    """Run on a worker: the job's records, each stamped with where it was measured.

    SymPy and the reference are imported here, once per worker, as a serial run imports
    them once: else each cell's forked process would import them inside its time limit.
    """
    from ..backends import symbolic  # noqa: F401
    from . import reference  # noqa: F401

    where = {"host": socket.gethostname(), "cpu": cpu_model()}
    return [{**r, **where} for r in work()]


def _exit_quickly() -> None:
    """On a worker of ours (``local:N``): once it has closed, its process ends at once.
    Its interpreter's teardown (SymPy, matplotlib, Numba loaded) kept the cluster's
    shutdown waiting 2-4 s, time a user waits for nothing (all results are in)."""
    def now() -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    atexit.register(now)  # registered last, so it runs first


def _is_daemon() -> bool:
    import multiprocessing

    return bool(multiprocessing.current_process().daemon)


class Cluster:
    """A Dask client for one run: ``local:N`` starts (and :meth:`close` stops) a
    LocalCluster; a ``tcp://`` address connects to a running scheduler."""

    def __init__(self, address: str, timeout: float | None = None) -> None:
        where, n = parse_address(address)
        require(address)
        import dask
        from distributed import Client, LocalCluster

        self._local = None
        if n is not None:
            cores = os.cpu_count() or 1
            if n > cores:
                raise DiffkitError(f"local:{n} would run {n} cells at once on {cores} cores, "
                                   f"so timings would measure contention: use local:{cores} "
                                   "or fewer")
            # while it runs (a restarted worker reads it again): the retries are ours
            # (once), and workers are not daemons, so they may fork the cells' processes
            self._config = dask.config.set({"distributed.scheduler.allowed-failures": 0,
                                            "distributed.scheduler.worker-saturation": 1.0,
                                            "distributed.worker.daemon": False})
            # its status page on a free local port: no clash with another cluster. Its
            # logs stay quiet: a lost worker or task is reported in the cells' records,
            # and a worker's heartbeat racing the shutdown is no news to a user
            try:
                self._local = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           memory_limit=0, dashboard_address="127.0.0.1:0",
                                           silence_logs=logging.CRITICAL, env=ONE_THREAD)
            except BaseException:
                self._config.__exit__(None, None, None)
                raise
            self.client = Client(self._local)
            self.client.run(_exit_quickly)
        else:
            try:
                self.client = Client(where, timeout=timeout or CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as exc:
                why = type(exc).__name__
                raise DiffkitError(f"no Dask scheduler answered at {where} ({why}): start one "
                                   "with `dask scheduler`, or check the address") from None
            if any(self.client.run(_is_daemon).values()):
                self.close()
                raise DiffkitError(f"the workers of {where} cannot start the isolated cell "
                                   "processes: start them with "
                                   "DASK_DISTRIBUTED__WORKER__DAEMON=False")
        self._slots: dict[str, int] = {}

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Disconnect; a ``local:N`` cluster is shut down with its workers."""
        self.client.close()
        if self._local is not None:
            self._local.close()
            self._config.__exit__(None, None, None)

    def _counts(self, done: int, submitted: int, waiting: int) -> str:
        """Progress: cells done / running / queued, and the workers."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        busy = min(submitted, sum(w["nthreads"] for w in workers.values()))
        return (f"done {done}/{done + submitted + waiting} · running {busy} · "
                f"queued {submitted - busy + waiting} · workers {len(workers)}")

    def concurrency(self, host: str) -> int | None:
        """Cells a machine measures at a time: the threads of its workers together."""
        if host not in self._slots:
            names = self.client.run(socket.gethostname, on_error="return")  # a worker may
            info = self.client.scheduler_info(n_workers=-1)["workers"]  # be restarting
            self._slots = {}
            for addr, name in names.items():
                if isinstance(name, str) and addr in info:
                    self._slots[name] = self._slots.get(name, 0) + info[addr]["nthreads"]
        return self._slots.get(host)

    def run(self, jobs: Sequence[Job], done: Callable[[Job, list[Record]], None],
            progress: Callable[[str], None] | None = None) -> None:
        """Run ``jobs`` as tasks, ``done(job, records)`` on the client as each finishes.

        A job whose worker died is submitted once more; a second loss (or a task that
        raised) calls ``done`` with its stubs as ``lost`` (``error``) records. A job its
        ``wanted()`` drops is done with no records: ``done`` is called once per job.
        """
        from distributed import KilledWorker, as_completed

        waiting, todo = list(jobs), {j.key for j in jobs if j.key is not None}
        # a chain (each job `after` every one before it) is the critical path: all of its
        # jobs go before independent ones, its head included (jobs before it + after it)
        behind = Counter(k for j in jobs for k in j.after)
        finished, running = as_completed(), {}

        def submit(job: Job, attempt: int) -> None:
            fut = self.client.submit(_on_worker, job.work, pure=False,
                                     priority=len(job.after) + behind[job.key])
            running[fut] = (job, attempt)
            finished.add(fut)

        def release() -> None:  # submit (or drop) each job whose `after` are all done
            while ready := [j for j in waiting if not any(k in todo for k in j.after)]:
                for job in ready:  # a dropped job may make others ready: loop again
                    waiting.remove(job)
                    if job.wanted():
                        submit(job, 1)
                    else:
                        todo.discard(job.key)
                        done(job, [])

        count = 0
        try:
            release()
            for fut in finished:
                job, attempt = running.pop(fut)
                try:
                    records = fut.result()
                except KilledWorker as exc:
                    if attempt == 1:
                        submit(job, 2)
                        continue
                    records = [{**r, "status": "lost", "message": "worker lost twice (killed "
                                f"or disconnected), last {exc.last_worker.address}"}
                               for r in job.stubs()]
                except Exception as exc:  # a task that raised (e.g. not picklable)
                    text = (str(exc).strip().splitlines() or [""])[0]
                    records = [{**r, "status": "error", "message": f"task failed: "
                                f"{type(exc).__name__}: {text}"[:300]} for r in job.stubs()]
                done(job, [self._placed(r) for r in records])
                todo.discard(job.key)
                release()
                count += 1
                if progress:
                    progress(f"{job.label} · {self._counts(count, len(running), len(waiting))}")
        finally:
            self.client.cancel(list(running))

    def start(self, call: Callable[[], T]) -> Callable[[], T]:
        """``call`` submitted as a task now, ahead of every job queued (a figure drawn
        while cells still run, not after them); the function returned waits for its
        result (a call whose worker was lost runs here instead)."""
        from distributed import KilledWorker

        fut = self.client.submit(call, pure=False, priority=AHEAD)

        def result() -> T:
            try:
                return fut.result()
            except KilledWorker:
                return call()
        return result

    def _placed(self, r: Record) -> Record:
        return {**r, "concurrency": self.concurrency(r["host"])} if "host" in r else r


@contextlib.contextmanager
def using(cluster: str | Cluster) -> Iterator[Cluster]:
    """An open :class:`Cluster`: ``cluster`` itself, or one opened for the block."""
    if isinstance(cluster, Cluster):
        yield cluster
        return
    with Cluster(cluster) as opened:
        yield opened
