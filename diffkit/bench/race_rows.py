"""The race's rows and the two helpers every section of it uses (:mod:`.race`,
:mod:`.cnn_race`): a row is one ratio, diffkit's figure over its opponent's.

>>> Row("grad", 2.0, 4.0, target=1.0).met
'met'
>>> Row("grad", 2.0, None).met
'skipped'
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from diffkit.bench import probes


@dataclass
class Row:
    """One ratio: diffkit's figure over the opponent's, against ``target`` (<= unless >=)."""

    measure: str
    ours: float | None
    theirs: float | None
    target: float | None = None
    unit: str = "s"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if not self.ours or not self.theirs else self.ours / self.theirs

    @property
    def met(self) -> str:
        if self.ratio is None:
            return "skipped"
        return "—" if self.target is None else "met" if self.ratio <= self.target else "NOT met"


def interleaved(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Median seconds per call of each function, measured in turn (:mod:`.probes`)."""
    return [median for median, _ in probes.interleaved(fns, repeat)]


def have(name: str) -> bool:
    return importlib.util.find_spec(name) is not None
