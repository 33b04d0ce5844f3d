"""Random cases of the edges (vmap over sort/argmax, concatenate(axis=None), tape gradients
of several targets) against their derivatives written out in numpy; and the soak's use."""

import random
from collections import Counter

import pytest

import edge_programs as E


@pytest.mark.parametrize("family", E.FAMILIES)
def test_random_edge_cases_agree_with_numpy(family):
    rng = random.Random(E.FAMILIES.index(family))
    seen: Counter = Counter()
    for _ in range(40):
        case = E.draw(rng, family)
        for v in E.judge(case):
            seen[v["status"]] += 1
            assert v["status"] == "agree", case.pretty() + "\n" + str(v)
    assert seen["agree"] >= 40  # every case judged (a crash would be 'error', not skipped)


def test_a_wrong_answer_is_a_disagreement():
    """The judge has teeth: a value 1e-9 off is caught."""
    case = E.draw(random.Random(0), "concat")
    original = E._concat

    def off(c):
        got, want = original(c)
        return [got[0] * (1 + 1e-9), got[1]], want
    E._concat, saved = off, E._concat
    try:
        assert [v["status"] for v in E.judge(case)] == ["disagree", "agree"]
    finally:
        E._concat = saved


def test_the_soak_draws_the_edge_families():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "soak.py"
    spec = importlib.util.spec_from_file_location("soak", path)
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    families = Counter(soak.make(i, 5)[0] for i in range(400))
    assert all(families[f] > 0 for f in E.FAMILIES), families
    family, case, _ = next(soak.make(i, 5) for i in range(400) if soak.make(i, 5)[0] == "byvalue")
    assert {v["status"] for v in soak.verdicts(family, case, 10)} == {"agree"}
