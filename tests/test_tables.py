"""Tables for people: they fit COLUMNS, colour only on a terminal, explain their units."""

import csv
import io
import sys

import pytest

from test_cli import run
from diffkit_cli.output import color, render


@pytest.mark.parametrize("argv", [
    ["list"],
    ["compare", "rosenbrock", "--repeat", "1"],
    ["compare", "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2,x2=5", "--repeat", "1",
     "--backends", "symbolic,numeric[method=central,order=4],forward,reverse"],
    ["steps", "sin(x)", "--at", "x=1"],
])
def test_tables_fit_80_columns(capsys, monkeypatch, argv):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    widest = max(len(line) for line in out.splitlines())
    assert widest <= 80, [line for line in out.splitlines() if len(line) > 80][0]


def test_list_keeps_one_line_per_function_at_80_columns(capsys, monkeypatch):
    from diffkit.bench import catalog

    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = run(capsys, "list", "functions")
    rows = [line for line in out.splitlines() if line.split(" ")[0] in catalog.names()]
    assert len(rows) == len(catalog.ENTRIES)  # no description wraps onto a second line


def test_list_csv_is_one_table(capsys):
    from diffkit.bench import catalog
    from diffkit.gradbench.workloads import names

    code, out, _ = run(capsys, "list", "functions", "--format", "csv")
    assert code == 0
    table = list(csv.reader(io.StringIO(out)))
    assert table[0][0] == "name" and len(table) == len(catalog.ENTRIES) + len(names()) + 1


def test_compare_table_explains_itself(capsys):
    code, out, _ = run(capsys, "compare", "sin(x)", "--at", "x=1", "--backends",
                       "symbolic,numeric,forward,reverse", "--repeat", "1")
    assert code == 0
    assert "0.5403" in out  # the derivative itself, cos(1) = 0.5403023…
    assert "cost = time(derivative) / time(f)" in out
    assert "the exact derivative of f's closed form, evaluated at 40 digits" in out
    for unit in ("nodes", "f-evals", "trace ops", "tape ops"):
        assert unit in out
    numeric = next(line for line in out.splitlines() if line.startswith("numeric"))
    assert " — " in numeric  # no setup step


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert color() and not color("file.txt")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not color()
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.delenv("NO_COLOR")
    assert not color()
    rows = [["backend", "status"], ["forward", "ok"], ["reverse", "timeout"]]
    assert "\x1b[" in render([], "table", table=rows, colored=True)
    assert "\x1b[" not in render([], "table", table=rows, colored=False)
