"""autograd's vector spaces over diffkit's pytrees: what autograd's own tests ask of them
(size, add, scalar_mul, inner_prod, randn, zeros, ones, standard_basis, covector)."""
import numpy as np

import diffkit.numpy as dnp
from diffkit.core import primal, shape
from diffkit.pytree import flatten


class VSpace:
    def __init__(self, value):
        leaves, self._rebuild = flatten(value)
        self.kinds = [(shape(v), np.result_type(primal(v)).kind == "c") for v in leaves]
        self.size = sum(int(np.prod(s)) * (2 if c else 1) for s, c in self.kinds)
        self.iscomplex = any(c for _, c in self.kinds)
        self.shape = self.kinds[0][0] if len(self.kinds) == 1 else None
        self._structure = repr(self._rebuild([None] * len(leaves)))

    def __eq__(self, other):
        return isinstance(other, VSpace) and (self.kinds, self._structure) == (
            other.kinds, other._structure)

    def __repr__(self):
        return f"VSpace({self._structure}, {self.kinds})"

    def _map(self, fn, *trees):
        parts = [flatten(t)[0] for t in trees]
        return self._rebuild([fn(*leaves) for leaves in zip(*parts)])

    def add(self, x, y):
        return self._map(lambda a, b: a + b, x, y)

    def scalar_mul(self, x, a):
        return self._map(lambda v: v * a, x)

    def inner_prod(self, x, y):
        total = 0.0
        for a, b in zip(flatten(x)[0], flatten(y)[0]):
            total = total + dnp.real(dnp.sum(dnp.conj(a) * b))
        return total

    def covector(self, x):
        return self._map(dnp.conj, x)

    def _make(self, make):
        return self._rebuild([make(s, c) for s, c in self.kinds])

    def zeros(self):
        return self._make(lambda s, c: _scalar(np.zeros(s, complex if c else float)))

    def ones(self):  # (the sum of the standard basis: 1 + 1j for complex entries)
        return self._make(lambda s, c: _scalar(np.ones(s) * (1 + 1j) if c else np.ones(s)))

    def randn(self):
        return self._make(lambda s, c: _scalar(np.asarray(np.random.randn(*s)) + (
            1j * np.asarray(np.random.randn(*s)) if c else 0.0)))

    def standard_basis(self):
        for k, (s, c) in enumerate(self.kinds):
            for unit in ((1.0, 1j) if c else (1.0,)):
                for i in range(int(np.prod(s))):
                    leaves = [np.zeros(t, complex if d else float) for t, d in self.kinds]
                    leaves[k].flat[i] = unit
                    yield self._rebuild([_scalar(v) for v in leaves])


def _scalar(v):
    return v[()] if v.ndim == 0 else v
