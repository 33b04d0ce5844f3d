"""Every CLI command against wrong, missing and hostile arguments (table-driven).

Each row runs ``diffkit ARGV`` in-process (``tests/test_cli.run``) and demands what the
design promises for any mistake a user can make: a non-zero exit, exactly one line on
stderr that starts ``diffkit: error:`` (not ``internal error``, which is diffkit admitting
a bug of its own) and names the problem, no traceback, and nothing executed (formula
injections would create ``HACKED``). ``tests/test_cli.py`` covers a first set of compare,
steps and swell mistakes; this table extends it to every command: compare, list, steps,
swell, trace, graph, rules, show, report, bench, and the group itself; a new command
fails ``test_the_table_covers_every_command`` until it has rows.
"""

from __future__ import annotations


import pytest

from test_cli import run

INJECT = "__import__('os').system('touch HACKED')"
LONG = "x" * 20_000


# (argv, fragment of the one error line[, mark])
ROWS = [
    # the group
    ([], None),  # no command: the help on stdout, exit 0 (was bug B13: the help as an error)
    (["nosuchcmd"], "No such command 'nosuchcmd'"),
    (["--bogus"], "No such option '--bogus'"),
    # list
    (["list", "--format", "yaml"], "'yaml' is not one of"),
    (["list", "extra"], "'extra' is not one of 'functions', 'backends'"),
    (["list", "--format", "csv"], "a CSV holds one table"),
    (["list", "-o", "/nonexistent/dir/out.txt"], "cannot write /nonexistent/dir/out.txt: no such folder"),
    (["list", "-o", "adir"], "is a directory"),
    # accuracy
    (["accuracy", "sn"], "unknown function 'sn'; did you mean sin?"),
    (["accuracy", "__class__"], "unknown function '__class__'"),
    (["accuracy", "sin", "--methods", "reverse,bogus"], "unknown method 'bogus'"),
    (["accuracy", "sin", "--points", "3"], "3 is not in the range x>=10"),
    (["accuracy", "sin", "--format", "yaml"], "'yaml' is not one of"),
    # styles
    (["styles", "-f", "caffe"], "unknown framework 'caffe'"),
    (["styles", "-f", INJECT], "unknown framework"),
    (["styles", "--format", "yaml"], "'yaml' is not one of"),
    (["styles", "extra"], "unexpected extra argument (extra)"),
    # rules
    (["rules", "sn"], "did you mean sin"),
    (["rules", "sin", "cos"], "unexpected extra argument (cos)"),
    (["rules", "__class__"], "unknown primitive '__class__'"),
    (["rules", "../../etc/passwd"], "unknown primitive"),
    (["rules", "sin\x00"], "unknown primitive"),
    # show
    (["show"], "Missing argument 'FUNC'"),
    (["show", "nosuchfn"], "unknown catalog function 'nosuchfn'"),
    (["show", "x +* 2"], "formula error at column 4"),
    (["show", "sin(x)", "--at", "y=1"], "does not use"),
    (["show", "sin(x)", "--at", "x=abc"], "not a number"),
    (["show", "babylonian_sqrt"], "needs a closed form"),
    (["show", INJECT], "only named functions can be called"),
    (["show", "syntax.py:f"], "syntax.py"),
    # trace
    (["trace"], "Missing argument 'FUNC'"),
    (["trace", "sin(x)", "--mode", "sideways"], "'sideways' is not one of"),
    (["trace", "nosuch"], "unknown catalog function 'nosuch'"),
    (["trace", "sin(x)", "--at", "x=[1,2"], "bad --at entry"),
    (["trace", "x.__class__"], "attribute access"),
    (["trace", "sin(x)", "--format", "xml"], "'xml' is not one of"),
    (["trace", INJECT], "formula error"),
    (["trace", "raises.py:f"], "import-time failure"),
    # graph
    (["graph", "sin(x)"], "Missing option '-o'"),
    (["graph", "sin(x)", "-o", "g.gif"], ".png, .svg or .pdf"),
    (["graph", "nosuch", "-o", "g.png"], "unknown catalog function"),
    (["graph", "sin(x)", "-o", "g.png", "--engine", "tikz"], "'tikz' is not one of"),
    (["graph", "sin(x)", "-o", "adir"], "is a directory"),
    (["graph", "sin(x)", "-o", "/nonexistent/dir/g.png"], "/nonexistent/dir/g.png"),
    (["graph", "open('HACKED', 'w')", "-o", "g.png"], "unknown function 'open'"),
    # steps
    (["steps"], "Missing argument 'FUNC'"),
    (["steps", "sin(x)", "--methods", ""], "unknown method"),
    (["steps", "sin(x)", "--methods", "central,bogus"], "unknown method bogus"),
    (["steps", "nosuch"], "unknown catalog function"),
    (["steps", "sin(x)", "--at", "q=1"], "does not use"),
    (["steps", INJECT], "formula error"),
    # swell
    (["swell"], "Missing argument 'FUNC'"),
    (["swell", "logistic_map", "--depth", "a..b"], "bad depth 'a..b'"),
    (["swell", "logistic_map", "--depth", "5..2"], "bad depth '5..2'"),
    (["swell", "logistic_map", "--depth", "-3"], "bad depth '-3'"),
    (["swell", "nosuch"], "unknown catalog function"),
    (["swell", "logistic_map", "--timeout", "0"], "--timeout"),
    (["swell", "sin(x)"], "unknown catalog function"),
    # report
    (["report"], "Missing argument 'SPEC'"),
    (["report", "nosuch.toml"], "does not exist"),
    (["report", "bad.toml"], "not valid TOML"),
    (["report", "weird.toml"], "unknown key 'sweep'"),
    (["report", "adir"], "is a directory"),
    (["report", "bin.toml"], "can't decode"),
    # advise
    (["advise"], "Missing argument 'FUNC'"),
    (["advise", "rosenbrok"], "did you mean rosenbrock"),
    (["advise", "exp", "--accuracy", "0"], "--accuracy"),
    (["advise", "exp", "--calls", "0"], "--calls"),
    (["advise", "exp", "--memory", "lots"], "'lots' is not a size"),
    (["advise", f"x + {INJECT}", "--at", "x=1"], "only named functions can be called"),
    # bench (never reaches the race: every row fails while parsing)
    (["bench", "--repeat", "0"], "--repeat"),
    (["bench", "--threads", "-1"], "--threads"),
    (["bench", "--quick", "extra"], "unexpected extra argument (extra)"),
    (["bench", "--bogus"], "No such option '--bogus'"),
    (["bench", "-o", "adir"], "is a directory"),
    # compare
    (["compare", "rosenbrock", "--format", "yaml"], "'yaml' is not one of"),
    (["compare", "rosenbrock", "--repeat", "0"], "--repeat"),
    (["compare", "rosenbrock", "--memory", "1"], "--memory"),
    (["compare", "rosenbrock", "--dim", "0"], "--dim"),
    (["compare", "rosenbrock", "--timeout", "abc"], "not a valid float"),
    (["compare", "rosenbrock", "--results", "adir"], "is a directory"),
    (["compare", "sin(x)", "--backends", "forward", "--results", "/nonexistent/dir/r.jsonl"],
     "no such folder /nonexistent/dir"),
    (["compare", "sin(x)", "-o", "adir"], "is a directory"),
    (["compare", "sin(x)", "--backends", ","], "name at least one backend"),
    (["compare", "sin(x)", "--backends", "numeric[order=3]"], "bad order 3"),
    (["compare", "sin(x)", "--backends", "numeric[bogus=1]"], "has no option 'bogus'"),
    (["compare", "sin(x)", "--backends", "compiled[fuse=maybe]"],
     "backend 'compiled': option 'fuse' is true or false, not 'maybe'"),
    (["compare", "sin(x)", "--backends", "numeric[method]"], "bad backend option"),
    (["compare", "sin(x)", "--backends", "numeric:method=central"],
     "cannot read backend 'numeric:method=central': write name[option=value,...]"),
    (["compare", "nofunc.py:f"], "has no function 'f'"),
    (["compare", "notcallable.py:f"], "has no function 'f'"),
    (["compare", "syntax.py:f"], "syntax.py"),
    (["compare", "raises.py:f"], "import-time failure"),
    (["compare", "../../../../etc/passwd:f"], "formula error"),
    (["compare", "\x00"], "unexpected character"),
    (["compare", ""], "the formula is empty"),
    (["compare", "   "], "the formula is empty"),
    (["compare", LONG], "unknown catalog function"),
    (["compare", "x+" * 6000 + "x"], "limit is 10000"),
    (["compare", "(" * 300 + "x" + ")" * 300], "nested more than 100 levels"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text("this is [ not toml")
    (tmp_path / "weird.toml").write_text('[[sweep]]\nfunctions = ["nosuch"]\n')
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00\x01")
    (tmp_path / "syntax.py").write_text("def f(x) return x\n")
    (tmp_path / "raises.py").write_text('raise RuntimeError("import-time failure")\n')
    (tmp_path / "nofunc.py").write_text("x = 1\n")
    (tmp_path / "notcallable.py").write_text("f = 3\n")
    (tmp_path / "adir").mkdir()
    return tmp_path


def _params():
    out = []
    for row in ROWS:
        argv, fragment, *mark = row
        ident = " ".join(argv)[:60].replace("\x00", "NUL") or "(no arguments)"
        out.append(pytest.param(argv, fragment, id=ident, marks=mark))
    return out


@pytest.mark.parametrize("argv, fragment", _params())
def test_every_command_answers_a_mistake_with_one_clear_line(capsys, workdir, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert "Traceback" not in out + err
    assert not (workdir / "HACKED").exists()
    if fragment is None:  # a row documenting that this is *not* a mistake
        assert code == 0 and not err.strip(), err
        return
    assert code not in (0, None), (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("diffkit: error: "), line  # not "internal error": a diffkit bug
    assert fragment in line, line
    assert len(line) < 1000, f"{len(line)} characters"


def test_the_table_covers_every_command():
    from diffkit_cli.main import COMMANDS

    covered = {argv[0] for argv, *_ in ROWS if argv}
    assert set(COMMANDS) <= covered, set(COMMANDS) - covered


def test_debug_mode_shows_the_traceback_for_internal_errors(capsys, workdir, monkeypatch):
    """DIFFKIT_DEBUG=1 is the documented way to see details: the exception propagates."""
    monkeypatch.setenv("DIFFKIT_DEBUG", "1")
    with pytest.raises(Exception):
        run(capsys, "compare", "nofunc.py:f")


def test_no_arguments_prints_the_help(capsys):
    """`diffkit` alone is a request for help: on stdout, exit 0."""
    from diffkit_cli.main import main

    try:
        main([])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 0 and "Commands:" in out and err == ""
