"""autograd.builtins: containers are diffkit's pytrees already; ``isinstance`` and ``type``
look through a value being differentiated to its primal value."""
import builtins as _b

from diffkit.core import Box, primal

dict, list, tuple = _b.dict, _b.list, _b.tuple  # noqa: A001


def isinstance(x, kind):  # noqa: A001
    return _b.isinstance(primal(x) if _b.isinstance(x, Box) else x, kind)


def type(x):  # noqa: A001
    return _b.type(primal(x) if _b.isinstance(x, Box) else x)
