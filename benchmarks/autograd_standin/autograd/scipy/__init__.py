"""autograd.scipy: diffkit.scipy, scipy behind it."""
from . import integrate, linalg, misc, signal, special, stats  # noqa: F401
