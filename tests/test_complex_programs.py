"""Random complex programs (tests/complex_programs.py) against JAX (x64, rtol 1e-9) and,
without JAX, against central differences; a property test, derandomized in CI (the
profile in tests/conftest.py), that counts the programs it judged."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import needs
from hypothesis import given, settings
from hypothesis import strategies as st

import complex_programs as C

EXAMPLES = 12
JUDGED: Counter = Counter()


def _judge_all(family: str, seed: int) -> None:
    case = C.draw(random.Random(seed), family)
    verdicts = C.judge(case)
    for v in verdicts:
        assert v["status"] == "agree", case.pretty() + "\n" + str(v)
    JUDGED[family] += 1


@pytest.mark.jax
@pytest.mark.parametrize("family", C.FAMILIES)
def test_random_complex_programs_agree(family: str) -> None:
    needs("jax")
    before = JUDGED[family]

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(st.integers(0, 2**32 - 1))
    def run(seed: int) -> None:
        _judge_all(family, seed)

    run()
    assert JUDGED[family] - before >= EXAMPLES  # every drawn program judged, none skipped


def test_without_jax_central_differences_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C, "_jax", lambda: None)
    seen: Counter = Counter()
    for family in C.FAMILIES:
        rng = random.Random(3)
        for _ in range(20):
            for v in C.judge(C.draw(rng, family)):
                seen[v["status"]] += 1
    assert seen == Counter({"agree": 20 * 4 + 20})  # grad x3 and jvp; one vjp per tree


def test_a_wrong_answer_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge has teeth: a gradient conjugated (PyTorch's convention) is caught."""
    case = C.draw(random.Random(0), "complex")
    original = C.quantities

    def conjugated(c: C.Case) -> tuple:
        names, got, want, rtol = original(c)
        return names, [got[0].conj(), *got[1:]], want, rtol
    monkeypatch.setattr(C, "quantities", conjugated)
    assert [v["status"] for v in C.judge(case)][:2] == ["disagree", "agree"]


def test_the_soak_draws_the_complex_families() -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "soak.py"
    spec = importlib.util.spec_from_file_location("soak", path)
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    families = Counter(soak.make(i, 5)[0] for i in range(400))
    assert all(families[f] > 0 for f in C.FAMILIES), families
    family, case, _ = next(soak.make(i, 5) for i in range(400) if soak.make(i, 5)[0] == "complex")
    assert {v["status"] for v in soak.verdicts(family, case, 10)} == {"agree"}
