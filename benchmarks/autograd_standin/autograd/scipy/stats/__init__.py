"""autograd.scipy.stats: diffkit.scipy.stats's distributions as modules of functions."""
from . import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t  # noqa: F401
