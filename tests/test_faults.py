"""Faults and hostile input: nothing a user types or a user function does takes diffkit down.

* Hostile formulas: ``parse_formula`` is fuzzed with random text, fragments of code
  injections and random ASTs (``ast.unparse`` of trees from a grammar that includes every
  forbidden construct). It only ever returns a Formula or raises FormulaError; it refuses a
  tree exactly when the tree holds a forbidden construct; and while parsing *and*
  evaluating, nothing is executed, imported or opened (``__import__``, ``open``, ``eval``,
  ``exec``, ``compile`` to code are patched to fail, and a ``sys.audit`` hook watches for
  exec/import/open/os.system/subprocess events). The number of inputs tried is reported.
  (``tests/test_formula.py`` holds the value and refusal tests this extends.)
* Harness faults: a user function that raises, loops forever, allocates without bound,
  kills its own process, segfaults, exits, recurses without end, prints megabytes or
  returns NaN/inf becomes one cell with its status and message, and the other cells of the
  sweep are measured.
* Interruptions: Ctrl-C (SIGINT) sent to ``diffkit compare ... --results F`` mid-sweep
  leaves a results file that a rerun resumes exactly (only the missing cells are measured;
  the finished lines stay byte-identical), and a file whose last line was torn is read
  back and resumed.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffkit as dk
import diffkit.numpy as dnp
import strategies as S
from diffkit.interpreters.forward import Dual
from diffkit.bench.formula import Formula, FormulaError, parse_formula
from diffkit.bench.harness import read_results
from diffkit.bench.cells import run_isolated

PARSER = Counter()
SCALE = float(os.environ.get("DIFFKIT_FUZZ_SCALE", "1"))


@pytest.fixture(scope="module", autouse=True)
def parser_report(request):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    quiet = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    if reporter is not None and PARSER:
        with quiet:
            reporter.write_line(f"\nparse_formula fuzz: {PARSER['inputs']} inputs tried, "
                                f"{PARSER['accepted']} accepted (and evaluated), "
                                f"{PARSER['refused']} refused with FormulaError")


# ----------------------------------------------------------------------------- nothing runs

_WATCHED = ("exec", "import", "open", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
            "os.fork", "subprocess.Popen", "ctypes.", "socket.", "os.remove", "os.unlink",
            "shutil.", "builtins.input", "os.kill", "pty.spawn", "webbrowser.open")
_AUDIT = {"on": False, "events": []}


def _audit(event: str, args: tuple) -> None:
    if _AUDIT["on"] and event.startswith(_WATCHED):
        _AUDIT["events"].append(event)


sys.addaudithook(_audit)  # process-wide and permanent, but only records while "on"


@contextlib.contextmanager
def nothing_runs():
    """Fail if code is executed, compiled to code, imported, or a file/process is opened."""
    import ast

    real_compile = builtins.compile
    calls: list[str] = []

    def forbid(name):
        def fail(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name}() was called while parsing or evaluating a formula")
        return fail

    def ast_only(source, filename, mode, flags=0, *args, **kwargs):
        if not flags & ast.PyCF_ONLY_AST:
            calls.append("compile")
            raise AssertionError("user text was compiled to code")
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    real_import = builtins.__import__

    def cached_only(name, globals=None, locals=None, fromlist=(), level=0):
        """Library code may re-import modules already loaded (numpy does, lazily); loading a
        new module would run its code, and that is forbidden."""
        package = (globals or {}).get("__package__") if level else None
        full = importlib.util.resolve_name("." * level + name, package) if level else name
        wanted = [full] + [f"{full}.{f}" for f in (fromlist or ()) if f != "*"]
        if full not in sys.modules or any(w not in sys.modules and not hasattr(sys.modules[full], w.rsplit(".", 1)[1])
                                          for w in wanted[1:]):
            calls.append(f"__import__({full!r})")
            raise AssertionError(f"import of {full!r} while parsing or evaluating a formula")
        return real_import(name, globals, locals, fromlist, level)

    saved = {n: getattr(builtins, n) for n in ("__import__", "open", "eval", "exec", "compile",
                                              "breakpoint", "input")}
    for n in ("open", "eval", "exec", "breakpoint", "input"):
        setattr(builtins, n, forbid(n))
    builtins.__import__ = cached_only
    builtins.compile = ast_only
    _AUDIT["events"].clear()
    _AUDIT["on"] = True
    try:
        yield
    finally:
        _AUDIT["on"] = False
        for n, v in saved.items():
            setattr(builtins, n, v)
    assert not calls, calls
    assert not _AUDIT["events"], f"audit events while parsing/evaluating: {_AUDIT['events']}"


def parse_and_run(text: str, values=(np.array([0.5, 2.0, -1.5]),)) -> Formula | FormulaError:
    """Parse ``text`` and, if accepted, evaluate it, all under :func:`nothing_runs`."""
    PARSER["inputs"] += 1
    with nothing_runs():
        try:
            formula = parse_formula(text)
        except FormulaError as exc:
            PARSER["refused"] += 1
            result: Formula | FormulaError = exc
        else:
            PARSER["accepted"] += 1
            result = formula
            with np.errstate(all="ignore"):
                try:
                    formula(*[values[0] * (i + 1) for i in range(len(formula.variables))])
                except (ArithmeticError, ValueError):  # 1/0 on ints, overflow, log of a list...
                    pass
    if isinstance(result, FormulaError):
        message = str(result)
        assert message.startswith("formula error") and "\n" not in message, message
    else:
        assert isinstance(result, Formula)
    return result


def fuzz_settings(n: int):
    return settings(max_examples=int(n * SCALE), deadline=2000, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


# ----------------------------------------------------------------------------- hostile formulas


@fuzz_settings(1500)
@given(S.formula_asts())
def test_random_asts_are_refused_exactly_when_they_hold_a_forbidden_construct(case):
    text, forbidden = case
    result = parse_and_run(text)
    assert isinstance(result, FormulaError) == forbidden, (text, result)


@fuzz_settings(800)
@given(st.text(max_size=300))
def test_arbitrary_unicode_text_is_parsed_or_refused(text):
    parse_and_run(text)


@fuzz_settings(1200)
@given(S.hostile_texts())
def test_fragments_of_code_injections_are_parsed_or_refused(text):
    parse_and_run(text)


ESCAPES = [
    "().__class__.__base__.__subclasses__()",
    "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings'][0]()"
    "._module.__builtins__['__import__']('os').system('touch HACKED')",
    "__builtins__", "globals()", "vars()", "locals()", "dir()", "help()", "quit()", "exit(1)",
    "x.__reduce_ex__(2)", "(lambda: 0).__code__", "sin.__call__.__self__", "type(x)(1)",
    "{**x}", "[*x]", "print(1)", "__import__", "__debug__", "breakpoint()", "input()",
    "open('/etc/passwd').read()", "sin(x) if __import__('os').system('touch HACKED') else 1",
    "ｓｉｎ(x)", "x\u200b + 1", "x\u202e + 1", "sin(x)#comment", "sin(x);import os", "1_000 * x",
    "0b101 * x", "0o17 + 0x1F", "1e999 * x", "-1e999", "9^9^9^9", "sum(x) / 0",
    "'\\x00'", "x" + "+x" * 4999, "sin(" * 100 + "x" + ")" * 100, "\\\nx", "x\r\n+1",
    "(yield x)", "await x", "x := 1", "f'{__import__(\"os\").system(\"touch HACKED\")}'",
]


@pytest.mark.parametrize("text", ESCAPES, ids=range(len(ESCAPES)))
def test_known_escape_attempts_run_nothing(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parse_and_run(text)
    assert not (tmp_path / "HACKED").exists()


def test_formulas_with_huge_integers_evaluate_to_floats():
    """Regression (was B9): exact ints beyond int64 reached numpy ufuncs."""
    with np.errstate(all="ignore"):
        assert parse_formula("exp(2^70)")() == np.inf
        parse_formula("sin(x*10^400)")(0.5)  # a float (nan or a number), not an exception


def test_whitelisted_trees_still_parse_and_evaluate_correctly():
    """The guard itself does not get in the way of legitimate formulas."""
    f = parse_and_run("log(x1) + x1*x2 - sin(x2) + maximum(x1, 0.5)^2")
    assert isinstance(f, Formula)
    with nothing_runs():
        got = f(2.0, 0.5)
    assert got == pytest.approx(np.log(2.0) + 1.0 - np.sin(0.5) + 4.0)


def test_the_guard_catches_execution():
    """Sanity check of the guard: exec, eval, open and importing a new module inside it
    fail the block; re-importing a loaded module (as numpy does internally) does not."""
    for attempt in (lambda: exec("1"), lambda: eval("1"), lambda: open(__file__),  # noqa: S102,S307
                    lambda: __import__("this_module_does_not_exist_xyz")):
        with pytest.raises(AssertionError):
            with nothing_runs():
                attempt()
    with nothing_runs():
        __import__("json")  # already loaded: no code runs


# ----------------------------------------------------------------------------- harness faults


def under_forward(action):
    """sin(x), except that under the forward backend (Dual inputs) it first does ``action``:
    the other backends' cells and the reference are unaffected."""
    def f(x):
        if isinstance(x, Dual):
            action()
        return dnp.sin(x)
    return f


def _raise():
    raise RuntimeError("user code failed")


def _loop():
    while True:
        pass


def _allocate():
    keep = []
    while True:
        keep.append(np.ones(10**7))


def _kill():
    os.kill(os.getpid(), signal.SIGKILL)


def _segfault():
    import faulthandler

    faulthandler.disable()  # (pytest enables it; its report would go to the terminal)
    ctypes.string_at(0)


def _exit():
    sys.exit(3)


def _hard_exit():
    os._exit(0)


def _recurse(n=0):
    return _recurse(n + 1)


def _interrupt():
    raise KeyboardInterrupt


def _chatty():
    for _ in range(100):
        print("x" * 100_000)
        print("y" * 100_000, file=sys.stderr)


FAULTS = {  # name: (action, status of the forward cell, fragment of its message)
    "raises": (_raise, "error", "RuntimeError: user code failed"),
    "loops forever": (_loop, "timeout", "no result within 3 s"),
    "allocates without bound": (_allocate, "oom", "out of memory (limit 300 MB)"),
    "kills itself (SIGKILL)": (_kill, "error", "worker killed by SIGKILL"),
    "segfaults": (_segfault, "error", "worker killed by SIGSEGV"),
    "calls sys.exit(3)": (_exit, "error", "exited with code 3"),
    "calls os._exit(0)": (_hard_exit, "error", "exited with code 0 before answering"),
    "recurses without end": (_recurse, "error", "RecursionError"),
    "raises KeyboardInterrupt": (_interrupt, "error", "before answering"),
    "prints megabytes": (_chatty, "ok", None),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_faulty_cell_is_one_row_and_the_sweep_goes_on(fault, capfd):
    action, status, fragment = FAULTS[fault]
    start = time.perf_counter()
    # 3 s for the cell that never ends; the others end by themselves, and a loaded host
    # (forking a large test process, paging in 300 MB) must not turn them into timeouts
    result = dk.compare(under_forward(action), 0.5, backends=["forward", "reverse", "numeric"],
                        timeout=3 if status == "timeout" else 30, memory_mb=300, repeat=1)
    rows = {r["backend"]: r for r in result.records()}
    assert rows["forward"]["status"] == status, rows["forward"]
    if fragment:
        assert fragment in rows["forward"]["message"]
        assert "\n" not in rows["forward"]["message"]
    for other in ("reverse", "numeric"):  # measured as usual
        assert rows[other]["status"] == "ok", rows[other]
        assert rows[other]["error"] < 1e-9 and rows[other]["time_s"] > 0
    out, err = capfd.readouterr()
    if fault != "prints megabytes":  # (pytest's capture replaces sys.stdout: see B10 below)
        assert len(out) + len(err) < 10_000  # a dying child does not flood the terminal
    assert time.perf_counter() - start < 60
    json.loads(result.to_json())


CHATTY = ("import sys\nimport diffkit.numpy as dnp\n\n\ndef f(x):\n    for _ in range(50):\n"
          "        print('x' * 100_000)\n        print('y' * 100_000, file=sys.stderr)\n"
          "    return dnp.sin(x)\n")


def test_a_chatty_function_does_not_flood_the_terminal(tmp_path):
    """10 MB printed by the user function in every cell: the CLI's output stays a table."""
    (tmp_path / "chatty.py").write_text(CHATTY)
    p = subprocess.run(_console() + ["compare", f"{tmp_path / 'chatty.py'}:f", "--at", "x=0.5",
                                     "--backends", "forward,reverse", "--repeat", "1", "-q"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-500:]
    assert len(p.stdout) < 5_000 and len(p.stderr) < 5_000
    assert "forward" in p.stdout and "reverse" in p.stdout


def test_a_chatty_function_does_not_flood_a_replaced_sys_stdout(capfd):
    """Regression (was B10): only fds 1 and 2 were silenced in the isolated child."""
    def chatty():
        print("x" * 1_000_000)

    run_isolated(lambda: (chatty(), {})[1], timeout=30)
    out, _ = capfd.readouterr()
    assert len(out) < 10_000


def test_a_function_that_fails_everywhere_fails_every_cell_with_its_message():
    def broken(x):
        raise ValueError("bad input shape, user error")

    result = dk.compare(broken, 0.5, backends=["forward", "reverse"], repeat=1)
    for row in result.records():
        assert row["status"] == "error"
        assert "bad input shape, user error" in row["message"]


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_and_inf_returning_functions_are_cells_with_an_infinite_error(value):
    """f(x) = x * nan (or exp(x) * inf): every AD and numeric cell is measured, reports
    error = inf with the rule 'not finite', never a crash, and is never `ok`: its status
    is `domain`, its message says which operation made f non-finite."""
    f = (lambda x: x * value) if np.isnan(value) else (lambda x: dnp.exp(x) * value)
    with np.errstate(all="ignore"):
        result = dk.compare(f, 0.5, backends=["forward", "reverse", "numeric"], repeat=1)
    for row in result.records():
        assert row["status"] == "domain", row
        assert row["message"] == ("f(0.5) is nan: mul(0.5, nan) is nan" if np.isnan(value)
                                  else "f(0.5) is inf: mul(1.64872, inf) is inf"), row
        assert row["error"] == float("inf") and row["error_rule"] == "not finite", row


def test_reference_of_a_nan_function_is_nan():
    """Regression (was B8): SymPy's nan constant was differentiated to 0."""
    from diffkit.bench.reference import reference

    r = reference(lambda x: x * np.nan, 0.5)
    assert np.isnan(r.value)
    assert np.isnan(r.derivative)


def test_an_exception_message_starting_with_a_newline_keeps_its_text():
    """Regression (was B17): the isolated cell kept the empty first line of SymPy's messages."""
    def fail():
        raise ValueError("\nCan't calculate derivative wrt 3/2.")

    r = run_isolated(fail, timeout=10)
    assert r["status"] == "error" and "Can't calculate derivative" in r["message"]


def test_run_isolated_reports_an_unpicklable_result():
    r = run_isolated(lambda: {"f": lambda: 1}, timeout=10)
    assert r["status"] == "error" and "could not be returned" in r["message"]


# ----------------------------------------------------------------------------- interruptions


def test_a_ctrl_c_while_a_cell_forks_stops_the_parent_after_the_fork():
    # the Ctrl-C lands inside the fork's own handlers (as a real one can, between logging's
    # lock and its release): it must wait for the fork and then stop the sweep, not be
    # swallowed there ("Exception ignored in ...") and leave the lock held, hanging the parent
    script = """
import os, signal
from diffkit.bench.cells import run_isolated
signal.signal(signal.SIGINT, signal.default_int_handler)
os.register_at_fork(before=lambda: os.kill(os.getpid(), signal.SIGINT))
try:
    run_isolated(lambda: {"value": 1.0}, timeout=30)
except KeyboardInterrupt:
    print("interrupted after the fork")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "interrupted after the fork", (done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr, done.stderr



def _console() -> list[str]:
    exe = shutil.which("diffkit")
    return [exe] if exe else [sys.executable, "-m", "diffkit_cli.main"]


# Once two cells are written, a call waits (up to a minute) while the test's `hold` file is
# there: the Ctrl-C comes mid-sweep on any machine, however loaded (a timed race did not)
SLOW = """import time
from pathlib import Path
import diffkit.numpy as dnp

HERE = Path({here!r})


def f(x):
    cells = HERE / "cells.jsonl"
    if (HERE / "hold").exists() and cells.exists() and len(cells.read_bytes().splitlines()) >= 2:
        time.sleep(60)
    return dnp.sin(x) * x
"""
CELLS = ["forward", "reverse", "numeric", "numeric[method=forward]", "numeric[method=richardson]",
         "numeric[order=4]"]


def _compare_cmd(src: Path, results: Path, *extra: str) -> list[str]:
    return _console() + ["compare", f"{src}:f", "--at", "x=0.7", "--backends", ",".join(CELLS),
                         "--repeat", "1", "--results", str(results), "-q", *extra]


def test_ctrl_c_mid_sweep_leaves_a_results_file_that_resumes_exactly(tmp_path):
    src = tmp_path / "slow.py"
    src.write_text(SLOW.format(here=str(tmp_path)))
    results, hold = tmp_path / "cells.jsonl", tmp_path / "hold"
    hold.touch()
    # SIGINT at its default, as in a terminal: a test run started in the background
    # (`nohup ... &`) ignores SIGINT, and a child inherits that
    proc = subprocess.Popen(_compare_cmd(src, results), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(results.read_bytes().splitlines()) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("diffkit: interrupted"), err
    assert "Traceback" not in err
    before = results.read_bytes()
    finished = read_results(results)
    assert 2 <= len(finished) < len(CELLS)
    assert before.endswith(b"\n")  # only whole cells were written

    hold.unlink()
    rerun = subprocess.run(_compare_cmd(src, results, "--format", "json"), capture_output=True,
                           text=True, cwd=tmp_path, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    after = results.read_bytes()
    assert after.startswith(before)  # the finished cells are byte-identical
    records = read_results(results)
    assert [r["backend"] for r in records[:len(finished)]] == [r["backend"] for r in finished]
    assert sorted(r["backend"] for r in records) == sorted(CELLS)  # each cell exactly once
    shown = {r["backend"]: r for r in json.loads(rerun.stdout)}
    for old in finished:  # reused as they were, not measured again
        assert shown[old["backend"]]["time_s"] == old["time_s"]
    assert all(r["status"] == "ok" for r in records)


def test_a_torn_last_line_is_read_back_and_resumed(tmp_path):
    results = tmp_path / "cells.jsonl"
    cmd = _console() + ["compare", "sin(x)*x", "--at", "x=0.7", "--backends",
                        "forward,reverse,numeric", "--repeat", "1", "--results", str(results), "-q"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    lines = results.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    torn = lines[0] + lines[1] + lines[2][: len(lines[2]) // 2]  # power cut mid-write
    results.write_bytes(torn)
    assert [r["backend"] for r in read_results(results)] == ["forward", "reverse"]
    again = subprocess.run(cmd + ["--format", "json"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    after = results.read_bytes()
    assert after.startswith(lines[0] + lines[1])  # finished cells untouched
    records = read_results(results)
    assert [r["backend"] for r in records] == ["forward", "reverse", "numeric"]
    shown = {r["backend"]: r for r in json.loads(again.stdout)}
    assert shown["forward"]["time_s"] == json.loads(lines[0])["time_s"]
    assert records[2]["status"] == "ok"


# ---------------------------------------------------------------- peers whose threads stay behind


def _peer_cell(name: str) -> dict:
    """A harness cell (forked from this process) taking a gradient with peer ``name``."""
    from diffkit.bench.cells import run_isolated

    def job() -> dict:
        g = dk.grad(lambda x: dnp.sum(dnp.sin(x) * x), backend=dk.backend(name))(np.ones(2))
        return {"g": g.tolist()}
    return run_isolated(job, timeout=60)


@pytest.mark.jax
def test_a_cell_forked_after_jax_ran_refuses_jax_in_one_line_instead_of_hanging(jax):
    jax.numpy.ones(3).block_until_ready()  # JAX's client and its threads now run here
    started = time.perf_counter()
    cell = _peer_cell("jax")
    assert cell["status"] == "error" and "forked from a process that had already run JAX" in \
        cell["message"] and "diffkit compare" in cell["message"]
    assert time.perf_counter() - started < 30  # at once, not at the timeout


@pytest.mark.torch
def test_a_cell_forked_after_torch_ran_its_threads_computes_on_one_thread():
    torch = pytest.importorskip("torch")
    x = torch.ones(400, 400, dtype=torch.float64)
    assert float((x @ x).sum()) == 400.0 ** 3  # the intra-op pool now runs here
    cell = _peer_cell("torch")
    assert cell["status"] == "ok", cell
    np.testing.assert_allclose(cell["g"], np.sin(1.0) + np.cos(1.0), rtol=1e-15)
