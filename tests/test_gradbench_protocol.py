"""``python -m diffkit.gradbench`` speaks GradBench's protocol: recorded sessions replayed.

Each file of ``tests/data/gradbench/`` is a session written by hand in GradBench's log
format (``{"elapsed", "message"}`` and ``{"elapsed", "response"}`` lines, as its
intermediary records them), with small inputs whose outputs are worked out by hand (in
each eval's module docstring the formulas; e.g. one RK4 step of the ``ode`` keeps
hᵏ/k! up to k = 4, so its fifth entry is 0). The messages are sent to the tool in a
subprocess; every response is checked against the recorded one: its id, success, error
text, output (numbers to 1e-12 relative), and timings (one ``evaluate`` per run:
``min_runs`` of them when ``min_seconds`` is 0, with at most one ``warmup`` first).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "gradbench"
SESSIONS = sorted(p.stem for p in DATA.glob("*.jsonl"))
EVALS = ("hello", "lse", "llsq", "gmm", "kmeans", "ode", "det", "lstm", "ba", "ht", "particle",
         "saddle")
# particle's and saddle's compiled programs unroll loops holding inner derivatives: fused,
# numba spends minutes on them, so saddle's session is replayed unfused; particle's, whose
# every evaluation flies 352 Euler steps (a program of seconds to build per function), by
# the eager backends only (its compiled runs: tests/test_gradbench_evals.py)
OTHERS = {"particle": ("forward",), "saddle": ("forward", "compiled[fuse=false]")}
REPLAYS = [(name, backend) for name in EVALS for backend in OTHERS.get(name, ("forward",
                                                                            "compiled"))]


def recorded(name: str) -> list[tuple[dict, dict | None]]:
    """(message, recorded response or None) in order."""
    lines = [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()
             if line.strip()]
    pairs: list[tuple[dict, dict | None]] = []
    for line in lines:
        assert set(line) in ({"elapsed", "message"}, {"elapsed", "response"}), line
        assert isinstance(line["elapsed"]["nanoseconds"], int)
        if "message" in line:
            pairs.append((line["message"], None))
        else:
            message, previous = pairs[-1]
            assert previous is None and line["response"]["id"] == message["id"], line
            pairs[-1] = (message, line["response"])
    return pairs


def tool(backend: str, messages: list[dict], *extra: str) -> subprocess.CompletedProcess:
    text = "".join(json.dumps(m) + "\n" for m in messages)
    return subprocess.run([sys.executable, "-m", "diffkit.gradbench", "--backend", backend,
                           *extra], input=text, capture_output=True, text=True, timeout=300)


def same_json(actual, expected, where: str = "output") -> None:
    """Equal structure and types; floats to 1e-12 relative (1e-12 absolute near 0)."""
    assert type(actual) is type(expected), f"{where}: {actual!r} is not like {expected!r}"
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected), f"{where}: keys {sorted(actual)}"
        for key in expected:
            same_json(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{where}: {len(actual)} entries"
        for i, (a, e) in enumerate(zip(actual, expected)):
            same_json(a, e, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert math.isclose(actual, expected, rel_tol=1e-12, abs_tol=1e-12), \
            f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def check(message: dict, response: dict, expected: dict, backend: str) -> None:
    where = f"response to message {message['id']} ({message['kind']})"
    assert sorted(response) == sorted(expected), f"{where}: fields {sorted(response)}"
    assert response["id"] == message["id"]
    if message["kind"] == "start":
        assert response["tool"] == "diffkit"
        assert response["config"]["backend"] == backend
        assert response["config"]["warmup"] is backend.startswith("compiled")
        return
    for key in ("success", "error"):
        if key in expected:
            assert response[key] == expected[key], f"{where}: {key} {response[key]!r}"
    if "output" in expected:
        same_json(response["output"], expected["output"])
    if "timings" in expected:
        timings = response["timings"]
        assert all(sorted(t) == ["name", "nanoseconds"] and isinstance(t["nanoseconds"], int)
                   and t["nanoseconds"] > 0 for t in timings), timings
        names = [t["name"] for t in timings]
        warm = ["warmup"] if backend.startswith("compiled") else []
        given = message["input"] if isinstance(message["input"], dict) else {}  # hello: a number
        runs = given.get("min_runs", 1)
        assert given.get("min_seconds", 0) == 0  # so the runs are min_runs exactly
        assert names == warm + ["evaluate"] * runs, names
        assert len([t for t in expected["timings"] if t["name"] == "evaluate"]) == runs


def replay(name: str, backend: str) -> None:
    pairs = recorded(name)
    done = tool(backend, [m for m, _ in pairs])
    assert done.returncode == 0, done.stderr[-2000:]
    responses = [json.loads(line) for line in done.stdout.splitlines()]
    expected = [(m, r) for m, r in pairs if r is not None]
    assert len(responses) == len(expected), done.stdout  # nothing else on stdout; end: none
    assert all(r is None for m, r in pairs if m["kind"] == "end")
    for (message, want), got in zip(expected, responses):
        check(message, got, want, backend)


def test_every_implemented_eval_has_a_recorded_session():
    from diffkit.gradbench import EVALS as IMPLEMENTED

    assert set(IMPLEMENTED) == set(EVALS) and set(EVALS) <= set(SESSIONS)
    for name in EVALS:
        kinds = [m["kind"] for m, _ in recorded(name)]
        functions = {m["function"] for m, r in recorded(name)
                     if m["kind"] == "evaluate" and r["success"]}
        assert kinds[:2] == ["start", "define"] and "analysis" in kinds
        assert functions == set(IMPLEMENTED[name].functions), (name, functions)  # every one


@pytest.mark.parametrize("name", SESSIONS)
def test_the_recorded_session_replays_by_reverse_mode(name):
    replay(name, "reverse")


@pytest.mark.parametrize("name,backend", REPLAYS, ids=[f"{b}-{n}" for n, b in REPLAYS])
def test_the_recorded_session_replays_by_the_other_backends(name, backend):
    replay(name, backend)


def test_a_line_that_is_not_json_ends_the_session_with_one_line():
    bad = subprocess.run([sys.executable, "-m", "diffkit.gradbench"], capture_output=True,
                         text=True, timeout=120, input='{"id": 0, "kind": "start"}\nnot json\n')
    assert bad.returncode == 1
    assert len(bad.stdout.splitlines()) == 1  # the start was answered
    assert bad.stderr.splitlines() == [
        "python -m diffkit.gradbench: error: line 2 is not JSON (Expecting value): not json"]


@pytest.mark.parametrize("argv,message", [
    (["--backend", "nope"], "unknown backend 'nope'"),
    (["--eval", "nope"], "diffkit has no eval 'nope'; it implements hello, lse, llsq, gmm, "
                         "kmeans, ode, det, lstm, ba, ht, particle, saddle"),
    (["--eval", "gmm", "--size", "2_5_999"], "unknown size '2_5_999' for gmm; its sizes are "
                                             "2_5_1000, 2_10_1000"),
    (["--eval", "gmm", "--function", "hessian"], "gmm has no function 'hessian'; its functions "
                                                 "are objective, jacobian"),
    (["--size", "5"], "--size needs --eval"),
])
def test_a_mistake_on_the_command_line_is_one_line_and_status_2(argv, message, capsys):
    from diffkit.gradbench.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err, err


def test_an_eval_runs_here_validated_and_logged(tmp_path, capsys):
    """--eval: GradBench's inputs for a size, each output checked against the hand-derived
    gradient; the log holds the session in GradBench's format, messages and responses."""
    from diffkit.gradbench.__main__ import main

    log = tmp_path / "session.jsonl"
    assert main(["--backend", "reverse", "--eval", "det", "--size", "5", "--min-seconds", "0",
                 "--min-runs", "2", "--log", str(log)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" per run")[0].rsplit(" ", 2)[0] for line in out] == [
        "[2] det::primal 5", "[4] det::gradient 5"]
    assert all(line.endswith("(2 runs) valid") for line in out), out
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [next(iter(set(line) - {"elapsed"})) for line in lines] == ["message", "response"] * 6
    kinds = [line["message"]["kind"] for line in lines if "message" in line]
    assert kinds == ["start", "define", "evaluate", "analysis", "evaluate", "analysis"]
    assert all(line["message"]["valid"] for line in lines
               if "message" in line and line["message"]["kind"] == "analysis")


def test_an_invalid_output_is_reported_and_the_status_is_1(capsys):
    """The analysis is the eval's: a wrong output (here a function returning twice the
    gradient) is found invalid against the hand-derived reference, with the mismatches."""
    import dataclasses

    import diffkit.gradbench as gb
    from diffkit.gradbench.protocol import Tool, drive

    lse = gb.EVALS["lse"]
    doubled = dataclasses.replace(lse, output=lambda function, result: [
        2 * v for v in lse.output(function, result)])
    lines: list[str] = []
    ok = drive(Tool("reverse", evals={"lse": doubled}), doubled, ["n=2500"], ["gradient"],
               min_seconds=0, report=lines.append)
    assert not ok and len(lines) == 1
    assert "INVALID: found 2500 mismatches, showing 10: [0]: expected" in lines[0]
