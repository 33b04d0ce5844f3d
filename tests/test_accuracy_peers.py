"""Issue 40's second bar: on every function of the accuracy atlas, diffkit's eager maximum
error is at most each installed peer's (JAX, PyTorch, autograd), value and first derivative,
at the atlas's 400 points, compared as the tables print them (two significant digits:
``diffkit.bench.atlas.ahead``). The fused kernels keep faster forms on some rows
(docs/accuracy.md, "Elementary functions"); ``python benchmarks/peers_ahead.py --seeds 0 1 2
3 --methods reverse,forward,compiled`` prints every row, at other draws too.
"""

from __future__ import annotations

import pytest

from diffkit.bench import atlas

pytestmark = pytest.mark.slow  # (the peers' own rules, 400 points, every function: a minute)

PEERS = [p for p in atlas.PEERS if atlas.available(p)]


@pytest.mark.skipif(not PEERS, reason="needs a peer: pip install '.[jax]' (or torch, autograd)")
@pytest.mark.parametrize("name", sorted(atlas.CASES))
def test_eager_diffkit_is_at_most_every_installed_peer(name):
    records = atlas.measure(atlas.CASES[name], ["reverse", "forward", *PEERS])
    if not any(r["key"] in PEERS and (r["value"] or r["d1"]) for r in records):
        pytest.skip(f"no installed peer computes {name}")
    assert atlas.ahead(records, ("reverse", "forward")) == []
