"""``dk.compare`` and ``diffkit compare`` at a complex point: a table, every backend answering
or saying ``n/a`` with its reason, judged against the closed form (JAX's convention:
``df/dx - i df/dy`` for a real f, ``f'(z)`` for a holomorphic one).
"""
from __future__ import annotations

import json

import numpy as np
from conftest import assert_close

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench.reference import complex_reference
from diffkit_cli.main import main

Z = np.array([1.0 + 2.0j, 0.5 - 1.0j])
BACKENDS = ["symbolic", "numeric", "numeric[method=complex]", "forward", "reverse", "compiled"]


def compare(*args, **kwargs) -> list[dict]:
    return dk.compare(*args, **kwargs).records()


def loss(z):
    return dnp.sum(dnp.abs(dnp.sin(z)) ** 2)


def by_backend(records: list[dict]) -> dict[str, dict]:
    """Rows by backend; the complex step's as "step"."""
    return {"step" if "method=complex" in r["backend"] else r["backend"]: r for r in records}


def test_a_real_function_of_complex_points() -> None:
    rows = by_backend(compare(loss, Z, backends=BACKENDS, repeat=1))
    expected = 2 * np.conj(np.sin(Z)) * np.cos(Z)                 # d/dx - i d/dy of |sin z|^2
    step = rows.pop("step")
    assert step["status"] == "n/a" and "needs a real input" in step["message"]
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row["message"])
        assert_close(np.asarray(row["derivative"]), expected,
                     rtol=1e-6 if name.startswith("numeric") else 1e-12)
        assert row["error"] <= (1e-5 if name.startswith("numeric") else 1e-12)
    assert_close(np.asarray(rows["symbolic"]["value"]), np.sum(np.abs(np.sin(Z)) ** 2),
                 rtol=1e-14)


def test_a_holomorphic_function_and_cells_that_cannot_answer() -> None:
    rows = by_backend(compare(lambda z: dnp.sum(z ** 3 * dnp.sin(z)), Z,
                                 backends=["symbolic", "reverse"], repeat=1))
    expected = 3 * Z ** 2 * np.sin(Z) + Z ** 3 * np.cos(Z)         # f'(z)
    for row in rows.values():
        assert row["status"] == "ok" and row["error"] < 1e-12
        assert_close(np.asarray(row["derivative"]), expected, rtol=1e-12)
    rows = by_backend(compare(lambda z: dnp.abs(dnp.sign(z)) + dnp.real(z), 1 + 2j,
                                 backends=["symbolic", "numeric", "forward"], repeat=1))
    assert rows["symbolic"]["status"] == "n/a" and "SymPy cannot differentiate sign" in \
        rows["symbolic"]["message"]
    assert rows["forward"]["status"] == "n/a" and "sign has no derivative rule" in \
        rows["forward"]["message"]
    assert rows["numeric"]["status"] == "ok"                       # |sign z| = 1: d/dx Re z
    assert_close(np.asarray(rows["numeric"]["derivative"]), 1.0 + 0.0j, rtol=1e-8)


def test_a_complex_output_that_is_not_holomorphic_is_not_applicable() -> None:
    rows = by_backend(compare(lambda z: z * dnp.conj(z), 1 + 2j,
                                 backends=["symbolic", "forward"], repeat=1))
    for row in rows.values():
        assert row["status"] == "n/a" and "not holomorphic" in row["message"]


def test_the_reference_is_the_closed_form() -> None:
    ref = complex_reference(lambda z: dnp.sum(dnp.abs(z) ** 2 * dnp.real(z)), Z)
    x, y = Z.real, Z.imag                                          # (x^2 + y^2) x
    assert_close(ref.derivative, (3 * x ** 2 + y ** 2) - 1j * (2 * x * y), rtol=1e-15)


def test_the_command_line_table(tmp_path, capsys) -> None:
    source = tmp_path / "fz.py"
    source.write_text("import diffkit.numpy as dnp\n\ndef loss(z):\n"
                      "    return dnp.sum(dnp.abs(dnp.sin(z)) ** 2)\n")
    try:
        main(["compare", f"{source}:loss", "--at", "x=[1+2j,0.5-1j]", "--repeat", "1",
              "--backends", "symbolic,numeric[method=complex],reverse", "--format", "json"])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr().out
    assert code == 0
    rows = by_backend(json.loads(out))
    assert rows["step"]["status"] == "n/a"
    for name in ("symbolic", "reverse"):
        got = np.array([complex(v) for v in rows[name]["derivative"]])   # JSON: text
        assert rows[name]["status"] == "ok"
        assert_close(got, 2 * np.conj(np.sin(Z)) * np.cos(Z), rtol=1e-12)
