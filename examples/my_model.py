"""A small model to differentiate from the command line: a logistic-regression loss.

    diffkit compare examples/my_model.py:loss --at x=[0.1,0.2,-0.3] --backends forward,reverse

``loss(w)`` is written with ``diffkit.numpy``, so every backend can run it: the
symbolic one builds its closed form, the numeric one calls it on plain arrays, the AD
ones carry tangents or record a tape. The data is fixed (a seeded generator).
"""

import numpy as np

import diffkit.numpy as dnp

_rng = np.random.default_rng(0)
X = _rng.standard_normal((40, 3))
y = np.where(X @ np.array([1.0, -2.0, 0.5]) + 0.3 * _rng.standard_normal(40) > 0, 1.0, -1.0)


def loss(w):
    """Mean logistic loss log(1 + exp(-y · Xw)) of the weights ``w`` (3 numbers)."""
    return dnp.mean(dnp.log(1.0 + dnp.exp(-y * (X @ w))))
