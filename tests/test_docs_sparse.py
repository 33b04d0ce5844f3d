"""The code blocks of docs/sparse-and-taylor.md run, in order, as one program, and print
what the page says they print."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).parent.parent / "docs" / "sparse-and-taylor.md"


def test_docs_sparse_and_taylor_examples_run_and_print_what_they_say() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    printed, namespace = io.StringIO(), {}
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 (our own docs)
    lines = printed.getvalue().splitlines()
    assert len(blocks) >= 7
    assert {"3 forward 3", "reverse 2", "6", "3"} <= set(lines)
    assert "[1.0, 1.0, 1.0, 0.0, -3.0, -8.0, -3.0]" in lines
