"""The code blocks of docs/transforms.md run, in order, as one program."""
from __future__ import annotations

import re
from pathlib import Path


def test_docs_transforms_examples_run() -> None:
    text = (Path(__file__).parent.parent / "docs" / "transforms.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/transforms.md", "exec"), namespace)  # noqa: S102 (our own docs)
