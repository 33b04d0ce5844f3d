"""Cells on a Dask cluster: the same records as a serial run, faults, and clear errors.

One ``local:2`` cluster (two single-threaded worker processes) serves the module. The
serial run is the reference: a cluster run must give the same cells, statuses and values
(timings and tracemalloc peaks are measurements and may differ). Skipped, with the
reason, when dask.distributed is not installed; the tests of a missing dask always run.
"""

import functools
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

import pytest
from diffkit_cli.main import main

from diffkit.bench import cluster as cl
from diffkit.bench.harness import compare
from diffkit.core import DiffkitError
from diffkit.reporting.page import page
from diffkit.reporting.report import build
from diffkit.reporting.runner import Runner, run_all, run_on, sections
from diffkit.reporting.spec import FIGURES, load_spec

SMALL = {  # every figure, the fewest cells that still show each (CI: a few seconds)
    "title": "small",
    "functions": ["exp", "babylonian_sqrt"],  # symbolic is n/a on a while loop
    "backends": ["symbolic", "reverse"],
    "figures": list(FIGURES),
    "limits": {"timeout": 30, "memory_mb": 1024, "repeat": 1},
    "steps": {"functions": ["exp"], "methods": ["central", "complex"]},
    "swell": {"functions": ["logistic_map"], "depths": [1, 2]},
    "scaling": {"function": "rosenbrock", "sizes": [2, 4], "backends": ["forward", "reverse"]},
    "jacobian": {"inputs": [2, 4], "outputs": [1]},
    "memory": {"function": "nested_sin", "size": 10, "depths": [1, 2]},
    "graphmode": {"function": "rosenbrock", "sizes": [2, 4]},
    "coloring": {"sizes": [10], "problems": ["banded"]},
    "orders": {"function": "exp", "orders": [1, 2], "ways": ["numeric", "taylor"]},
    "solvers": {"functions": ["newton_cubic"], "iterations": [2, 4]},
}
MEASURED = {"time_s", "f_time_s", "setup_s", "cost_ratio", "time_spread_s", "first_call_s",
            "peak_bytes", "host", "cpu", "concurrency"}
IDENT = ("sweep", "cell", "function", "backend", "method", "way", "n", "m", "depth", "step",
         "steps", "auto")


def ident(r):
    return tuple(json.dumps(r.get(k)) for k in IDENT)


def lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def run_cli(capsys, *argv):
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err.strip().splitlines()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ without dask


@pytest.fixture
def no_dask(monkeypatch):
    for name in list(sys.modules):
        if name == "distributed" or name.startswith("distributed."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails


def test_without_dask_the_option_is_one_line_and_the_default_path_is_unchanged(
        no_dask, capsys, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('figures = ["accuracy"]\nfunctions = ["exp"]\n')
    for argv in (["compare", "exp", "--cluster", "local:1"],
                 ["report", str(spec), "-o", str(tmp_path / "r"), "--cluster", "local:1"]):
        code, err = run_cli(capsys, *argv)
        assert code == 2 and err == ["diffkit: error: the cluster needs dask.distributed: "
                                     "pip install diffkit[cluster]"]
    assert not (tmp_path / "r" / "results.jsonl").exists()
    rows = compare("exp", backends=["forward"], repeat=1).records()
    assert rows[0]["status"] == "ok" and rows[0]["error"] < 1e-14


def test_a_malformed_address_is_one_line(capsys):
    code, err = run_cli(capsys, "compare", "exp", "--cluster", "my-laptop")
    assert code == 2 and len(err) == 1 and "local:N" in err[0] and "tcp://host:port" in err[0]


def test_an_experiment_on_a_cluster_is_one_line(capsys):
    spec = Path(__file__).parents[1] / "reports" / "fusion.toml"
    code, err = run_cli(capsys, "report", str(spec), "--cluster", "local:1")
    assert code == 2 and err == ["diffkit: error: the fusion experiment runs in this process, "
                                 "not as cells a cluster could share; run it without --cluster"]


def test_a_report_whose_every_task_was_lost_still_builds(tmp_path):
    """Every cell ``lost``: each figure and table shows them; the next run measures them."""
    from diffkit.reporting import solvers
    from diffkit.reporting.figures import draw

    spec = load_spec(SMALL)
    run = Runner(tmp_path / "results.jsonl", spec["limits"])
    run.plan = []
    run_all(spec, run, None)
    jobs, run.plan = run.plan, None
    run.reload()
    for job in jobs:
        for r in job.stubs():
            run._add({**r, "status": "lost", "message": "worker lost twice"})
    data = run_all(spec, run, None)
    for fig, rows in data.items():
        assert rows and all(r["status"] == "lost" for r in rows)
        drawn = solvers.figure(rows) if fig == "solvers" else draw(fig, rows, spec[fig])
        drawn.savefig(tmp_path / f"{fig}.png", dpi=20)
    assert re.search(r"did not finish: \d+ lost", page(spec, data, "cmd", run.path))
    again = Runner(run.path, spec["limits"])
    again.plan = []
    run_all(spec, again, None)
    assert len(again.plan) == len(jobs)  # lost cells are measured again
    run_all(spec, Runner(run.path, spec["limits"]), None)  # (serially, here)
    measured = lines(run.path)  # each in the place of its lost record: every cell once
    assert measured and all(r["status"] != "lost" for r in measured)
    assert len({ident(r) for r in measured}) == len(measured)


# ------------------------------------------------------------------ on a local cluster



@pytest.fixture(scope="module")
def local2():
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 cores for local:2")
    with cl.Cluster("local:2") as c:
        yield c


@pytest.mark.cluster
def test_more_local_workers_than_cores_is_refused():
    n = (os.cpu_count() or 1) + 1
    with pytest.raises(DiffkitError, match=f"local:{n} would run {n} cells at once"):
        cl.Cluster(f"local:{n}")


@pytest.mark.cluster
def test_an_unreachable_scheduler_is_one_line_naming_it_before_anything_runs(
        capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(cl, "CONNECT_TIMEOUT", 1.0)
    address = f"tcp://127.0.0.1:{free_port()}"
    code, err = run_cli(capsys, "compare", "exp", "--results", str(tmp_path / "r.jsonl"),
                        "--cluster", address)
    assert code == 2 and len(err) == 1 and f"no Dask scheduler answered at {address}" in err[0]
    assert not (tmp_path / "r.jsonl").exists()


def sweep(path, cluster=None, progress=None, spec=SMALL):
    """The report's data (records per figure) from its sweeps, measured serially or on
    ``cluster``; drawing is left out (the same code draws either, and it is slow)."""
    spec = load_spec(spec)
    run = Runner(path, spec["limits"])
    if cluster is not None:
        run_on(cluster, spec, run, progress)
    return spec, run_all(spec, run, None)


def timeless(spec, data):
    """The report page with every measured figure (time, memory, where) blanked."""
    data = {fig: [{k: None if k in MEASURED else v for k, v in r.items()} for r in rows]
            for fig, rows in data.items()}
    return re.sub(r"Generated [^.]*\.", "", page(spec, data, "cmd", Path("results.jsonl")))


@pytest.mark.cluster
def test_a_report_on_two_workers_equals_the_serial_one_except_timings(local2, tmp_path):
    spec, serial = sweep(tmp_path / "serial.jsonl")
    seen = []
    _, clustered = sweep(tmp_path / "cluster.jsonl", local2, seen.append)
    a, b = lines(tmp_path / "serial.jsonl"), lines(tmp_path / "cluster.jsonl")
    assert sorted(map(ident, a)) == sorted(map(ident, b)) and len(set(map(ident, b))) == len(b)
    by = {ident(r): r for r in b}
    for r in a:  # same cells, statuses, values, errors, sizes
        mine = {k: v for k, v in r.items() if k not in MEASURED}
        assert mine == {k: v for k, v in by[ident(r)].items() if k not in MEASURED}
    assert {"ok", "n/a"} <= {r["status"] for r in a}  # symbolic on babylonian_sqrt: n/a
    assert all(r["host"] == socket.gethostname() and r["concurrency"] == 2 for r in b)
    assert timeless(spec, serial) == timeless(spec, clustered)
    assert re.fullmatch(r".* · done \d+/\d+ · running [0-2] · queued \d+ · workers 2",
                        seen[-1]) and f"done {len(seen)}/{len(seen)}" in seen[-1]
    assert "Measured on a Dask cluster: " in page(spec, clustered, "cmd", Path("r.jsonl"))


KILLER = '''
import os, signal
from pathlib import Path
import diffkit.numpy as dnp

KILLS = Path(__file__).with_suffix(".kills")


def f(x):
    """sin, after SIGKILL-ing the worker process running it, the first two times."""
    kills = int(KILLS.read_text()) if KILLS.exists() else 0
    if kills < 2:
        KILLS.write_text(str(kills + 1))
        os.kill(os.getppid(), signal.SIGKILL)  # the parent of an isolated cell: its worker
    return dnp.sin(x)
'''


@pytest.mark.cluster
def test_each_figure_is_handed_to_draw_once_as_soon_as_its_cells_are_in(local2, tmp_path):
    spec, path, seen = load_spec(SMALL), tmp_path / "r.jsonl", {}
    run = Runner(path, spec["limits"])
    data = run_on(local2, spec, run, None, lambda fig, rows: seen.setdefault(
        fig, []).append((rows, len(lines(path)))))
    assert sorted(seen) == sorted(sections(spec)) and all(len(v) == 1 for v in seen.values())
    serial = run_all(spec, run, None)  # nothing left to measure: the records as stored
    assert {fig: v[0][0] for fig, v in seen.items()} == serial == data
    everything = len(lines(path))  # figures whose cells all came in before the last one
    assert min(n for [(_, n)] in seen.values()) < everything  # were drawn meanwhile


def _started_after(seconds: float) -> float:
    start = time.time()
    time.sleep(seconds)
    return start


@pytest.mark.cluster
def test_a_figure_is_drawn_ahead_of_the_jobs_already_queued(local2):
    """Twelve 0.3 s jobs queued on two workers run in six waves; a draw started after
    them goes in one of the first waves (the second or third here), not after the sixth."""
    queued = [local2.client.submit(_started_after, 0.3, pure=False) for _ in range(12)]
    drawn = local2.start(functools.partial(_started_after, 0.0))
    starts = sorted(f.result() for f in queued)
    assert drawn() < starts[8]  # before the fifth wave


@pytest.mark.cluster
def test_a_worker_killed_mid_cell_is_retried_then_lost_and_a_rerun_completes(
        local2, tmp_path):
    (tmp_path / "killer.py").write_text(KILLER)
    killer = f"{tmp_path / 'killer.py'}:f"
    spec = {**SMALL, "figures": ["accuracy"], "functions": ["exp", killer],
            "backends": ["forward", "reverse"], "solvers": {}}
    results = tmp_path / "results.jsonl"
    _, data = sweep(results, local2, spec=spec)
    first = lines(results)
    assert len({ident(r) for r in first}) == len(first) == 4  # each cell once
    lost = [r for r in first if r["status"] == "lost"]
    assert [r["function"] for r in lost] == [killer, killer]
    assert all("worker lost twice" in r["message"] for r in lost)
    assert (tmp_path / "killer.kills").read_text() == "2"  # tried, retried, given up
    assert all(r["status"] == "ok" for r in first if r["function"] != killer)
    assert [r["status"] for r in data["accuracy"]] == ["ok", "ok", "lost", "lost"]

    sweep(results, local2, spec=spec)  # the rerun measures the lost cells only, in their place
    again = lines(results)
    kept = [r for r in first if r["status"] != "lost"]
    assert again[:len(kept)] == kept and len(again) == len({ident(r) for r in again}) == 4
    assert [(r["function"], r["status"]) for r in again[len(kept):]] == [(killer, "ok")] * 2
    assert all(abs(r["error"]) < 1e-12 for r in again[len(kept):])


@pytest.mark.cluster
def test_an_interrupted_client_keeps_finished_cells_and_the_rerun_resumes(local2, tmp_path):
    spec = {**SMALL, "figures": ["jacobian"], "jacobian": {"inputs": [2, 4], "outputs": [1, 2]},
            "solvers": {}}
    seen = []

    def interrupt(what):
        seen.append(what)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build(spec, tmp_path, progress=interrupt, cluster=local2)
    kept = lines(tmp_path / "results.jsonl")
    assert len(kept) == 3
    build(spec, tmp_path, cluster=local2)
    every = lines(tmp_path / "results.jsonl")
    assert every[:3] == kept and len(every) == len({ident(r) for r in every}) == 8


@pytest.mark.cluster
def test_a_job_waits_for_the_cells_it_needs_and_is_dropped_when_they_failed(local2):
    got, asked = {}, []

    def job(key, status, after=(), wanted=lambda: True):
        return cl.Job(key, lambda: [{"function": key, "status": status}],
                      lambda: [{"function": key}], key, after, wanted)

    def skip_after_timeout():
        asked.append(dict(got))
        return got.get("small") != "timeout"

    jobs = [job("big", "ok", ["small"], skip_after_timeout), job("small", "timeout"),
            job("bigger", "ok", ["big"])]
    local2.run(jobs, lambda j, records: got.update({j.key: records and records[0]["status"]}))
    assert got == {"small": "timeout", "big": [], "bigger": "ok"}  # dropped: done, no records
    assert asked == [{"small": "timeout"}]


@pytest.mark.cluster
def test_compare_on_two_workers_equals_the_serial_compare(local2, tmp_path):
    kw = {"backends": ["numeric", "reverse"], "n": 3, "repeat": 1}
    serial = compare("rosenbrock", **kw).records()
    rows = compare("rosenbrock", cluster=local2, results=tmp_path / "r.jsonl", **kw).records()
    assert [r["backend"] for r in rows] == ["numeric", "reverse"]
    for a, b in zip(serial, rows):
        assert {k: v for k, v in a.items() if k not in MEASURED} == {
            k: v for k, v in b.items() if k not in MEASURED}
    assert len(lines(tmp_path / "r.jsonl")) == 2

