"""The code blocks of docs/solvers.md run, in order, as one program (their asserts check
values against closed forms)."""
from __future__ import annotations

import re
from pathlib import Path


def test_docs_solvers_examples_run() -> None:
    text = (Path(__file__).parent.parent / "docs" / "solvers.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/solvers.md", "exec"), namespace)  # noqa: S102 (our own docs)
