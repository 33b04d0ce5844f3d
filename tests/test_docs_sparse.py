"""The code blocks of docs/sparse-and-taylor.md run, in order, as one program."""
from __future__ import annotations

import re
from pathlib import Path


def test_docs_sparse_and_taylor_examples_run(capsys) -> None:
    text = (Path(__file__).parent.parent / "docs" / "sparse-and-taylor.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 7
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/sparse-and-taylor.md", "exec"), namespace)  # noqa: S102 (our own docs)
    printed = capsys.readouterr().out.split("\n")
    assert "3 forward 3" in printed and "reverse 2" in printed and "6" in printed
    assert "[1.0, 1.0, 1.0, 0.0, -3.0, -8.0, -3.0]" in printed
