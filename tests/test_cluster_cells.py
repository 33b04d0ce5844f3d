"""Comparison cells travel as plain data: every backend, symbolic included, measured on a
``local:2`` cluster and on a ``tcp://`` scheduler this test starts, gives the serial cells."""

import json

import numpy as np
import pytest

import diffkit.numpy as dnp
from diffkit.bench.celltask import CellTask, measure_cell
from diffkit.bench.harness import DEFAULT_BACKENDS, compare
from test_cli import run
from test_cluster import free_port, local2  # noqa: F401  (local2: the module's fixture)

pytestmark = pytest.mark.cluster
MEASURED = {"time_s", "f_time_s", "setup_s", "cost_ratio", "time_spread_s", "first_call_s",
            "peak_bytes", "host", "cpu", "concurrency", "tape_bytes"}
EVERY = list(DEFAULT_BACKENDS) + ["numeric[method=complex]"]


def user_function(x):  # a function of the user's own, sent by value to the workers
    return dnp.sum(dnp.sin(x) * x)


def same_cells(serial, clustered):
    assert [r["backend"] for r in serial] == [r["backend"] for r in clustered]
    for a, b in zip(serial, clustered):
        assert a["status"] == "ok", a
        assert {k: v for k, v in a.items() if k not in MEASURED} == {
            k: v for k, v in b.items() if k not in MEASURED}


def test_every_backend_on_two_workers_equals_the_serial_run(local2):
    kw = {"backends": EVERY, "n": 6, "repeat": 1}
    same_cells(compare("rosenbrock", **kw).records(),
               compare("rosenbrock", cluster=local2, **kw).records())


def test_a_users_function_and_a_formula_travel_too(local2):
    x = np.array([0.3, -1.1, 2.0])
    kw = {"backends": ["symbolic", "compiled", "reverse"], "repeat": 1}
    same_cells(compare(user_function, x, **kw).records(),
               compare(user_function, x, cluster=local2, **kw).records())
    kw["at"] = {"x1": 2.0, "x2": 0.5}
    same_cells(compare("log(x1) + x1*x2 - sin(x2)", **kw).records(),
               compare("log(x1) + x1*x2 - sin(x2)", cluster=local2, **kw).records())


def test_a_cell_is_plain_data_measured_where_it_lands():
    """The task pickles without a live backend, and measures like the serial path."""
    import pickle

    task = CellTask("rosenbrock", None, 4, None, [1.0, 2.0, 3.0, 4.0], "grad", "symbolic", {},
                    {"timeout": 60, "memory_mb": 2048}, 1)
    row = measure_cell(pickle.loads(pickle.dumps(task)))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    exact = np.zeros(4)  # sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, written out
    for i in range(3):
        r = x[i + 1] - x[i] ** 2
        exact[i] += -400.0 * x[i] * r - 2.0 * (1.0 - x[i])
        exact[i + 1] += 200.0 * r
    np.testing.assert_allclose(row["derivative"], exact, rtol=1e-15)


def test_every_backend_through_a_tcp_scheduler():
    import dask
    from distributed import LocalCluster

    port = free_port()
    with dask.config.set({"distributed.worker.daemon": False}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                         host="127.0.0.1", scheduler_port=port, dashboard_address=None):
        kw = {"backends": EVERY, "n": 4, "repeat": 1}
        same_cells(compare("rosenbrock", **kw).records(),
                   compare("rosenbrock", cluster=f"tcp://127.0.0.1:{port}", **kw).records())


def test_the_readme_command_with_the_default_backends_exits_0(capsys):
    code, out, err = run(capsys, "compare", "rosenbrock", "--dim", "30", "--cluster", "local:2",
                         "--repeat", "1", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["backend"] for r in rows] == list(DEFAULT_BACKENDS)
    assert {r["status"] for r in rows} == {"ok"}
