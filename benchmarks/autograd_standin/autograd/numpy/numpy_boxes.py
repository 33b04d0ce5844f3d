"""autograd.numpy.numpy_boxes: diffkit's boxes."""
from diffkit.core import Box as ArrayBox  # noqa: F401
