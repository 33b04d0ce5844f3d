"""autograd.numpy.random: numpy's."""
from numpy.random import *  # noqa: F403
