"""autograd.scipy.misc: logsumexp."""
from diffkit.scipy.special import logsumexp  # noqa: F401
