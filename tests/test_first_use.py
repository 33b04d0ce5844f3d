"""A first-time user's mistakes: one line on stderr, exit 2, and nothing measured first."""

import time
from pathlib import Path

import pytest

from test_cli import run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("def hello(x):\n    return 'hello'\n\n"
                    "def boom(x):\n    raise RuntimeError('boom')\n")
    return path


def one_line(code, err, *fragments):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in err and "internal error" not in err


def test_a_number_for_a_vector_function(capsys):
    code, _, err = run(capsys, "compare", "rosenbrock", "--at", "x=1")
    one_line(code, err, "rosenbrock takes a vector x", "--at x=[v1,v2,...]")


def test_a_function_returning_a_string(capsys, user_file):
    code, out, err = run(capsys, "compare", f"{user_file}:hello", "--repeat", "1")
    one_line(code, err, "the function returned a str ('hello'), not numbers")
    assert out == ""  # no table: nothing was measured


def test_advise_blames_the_users_function(capsys, user_file):
    code, _, err = run(capsys, "advise", f"{user_file}:boom")
    one_line(code, err, "the function itself failed at x = 1: RuntimeError: boom")


@pytest.mark.parametrize("argv", [
    ["compare", "rosenbrock", "--dim", "200", "--results", "/proc/nope.jsonl"],
    ["compare", "rosenbrock", "--dim", "200", "-o", "/proc/nope.txt"],
    ["report", str(ROOT / "reports" / "quick.toml"), "-o", "/proc/rep"],
    ["report", str(ROOT / "reports" / "quick.toml"), "-o", "/proc/rep/deeper"],
])
def test_an_unwritable_path_is_refused_before_measuring(capsys, argv):
    started = time.perf_counter()
    code, _, err = run(capsys, *argv)
    one_line(code, err, "cannot write", "/proc/")
    assert time.perf_counter() - started < 5.0  # refused at parsing: no cell ran


def test_a_writable_folder_and_file_still_pass(tmp_path):
    from diffkit_cli.output import writable, writable_folder

    assert writable(None, None, str(tmp_path / "r.jsonl")) == str(tmp_path / "r.jsonl")
    assert not (tmp_path / "r.jsonl").exists()  # the try leaves nothing behind
    assert writable_folder(None, None, str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
