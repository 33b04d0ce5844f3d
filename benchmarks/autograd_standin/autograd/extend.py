"""autograd.extend: ``primitive`` and ``defvjp`` as diffkit custom VJP rules."""
import diffkit as dk
from diffkit.core import Box  # noqa: F401 (autograd.extend.Box)


class Primitive:
    """A function with autograd-style VJP makers: ``maker(ans, *args)(g)`` per argument."""

    def __init__(self, fun):
        self.fun, self.vjps = fun, {}
        self.__name__ = getattr(fun, "__name__", "primitive")
        self.__doc__ = getattr(fun, "__doc__", None)

    def __call__(self, *args, **kwargs):
        boxed = [i for i, a in enumerate(args) if isinstance(a, Box)]
        if not boxed:
            return self.fun(*args, **kwargs)
        if not self.vjps:
            raise NotImplementedError(f"no VJP defined for primitive {self.__name__}")

        def call(*xs):
            full = list(args)
            for i, x in zip(boxed, xs):
                full[i] = x
            return self.fun(*full, **kwargs)

        def fwd(*xs):
            ans = call(*xs)
            return ans, (ans, xs)

        def bwd(res, g):
            ans, xs = res
            full = list(args)
            for i, x in zip(boxed, xs):
                full[i] = x
            return tuple(self.vjps[i](ans, *full, **kwargs)(g) if i in self.vjps else None
                         for i in boxed)

        rule = dk.custom_vjp(call)
        rule.defvjp(fwd, bwd)
        return rule(*(args[i] for i in boxed))


def primitive(fun):
    return Primitive(fun)


def notrace_primitive(fun):
    return fun


def defvjp(fun, *vjpmakers, argnums=None):
    for i, maker in zip(argnums or range(len(vjpmakers)), vjpmakers):
        if maker is not None:
            fun.vjps[i] = maker


def defvjp_argnum(fun, vjpmaker):
    raise NotImplementedError("defvjp_argnum is not mapped onto diffkit")


def defjvp(fun, *jvpfuns, argnums=None):
    raise NotImplementedError("defjvp is not mapped onto diffkit (give a VJP: defvjp)")


def def_linear(fun):
    raise NotImplementedError("def_linear is not mapped onto diffkit")


def vspace(value):
    """autograd's vector space of a value (a pytree of arrays), with diffkit's operations."""
    from .vspace import VSpace
    return VSpace(value)

