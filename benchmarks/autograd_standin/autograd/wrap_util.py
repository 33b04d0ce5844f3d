"""autograd's ``unary_to_nary``: an operator on f(x) made one on f(*args) at ``argnum``."""
import functools


def unary_to_nary(unary_operator):
    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *nary_op_args, **nary_op_kwargs):
        @functools.wraps(fun)
        def nary_f(*args, **kwargs):
            @functools.wraps(fun)
            def unary_f(x):
                if isinstance(argnum, int):
                    subargs = args[:argnum] + (x,) + args[argnum + 1:]
                else:
                    subargs = list(args)
                    for i, xi in zip(argnum, x):
                        subargs[i] = xi
                return fun(*subargs, **kwargs)

            x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)
        name = f"{unary_operator.__name__}_of_{get_name(fun)}"
        nary_f.__name__ = name if argnum == 0 else f"{name}_wrt_argnum_{argnum}"
        nary_f.__doc__ = (f"    {unary_operator.__name__} of function {get_name(fun)} with "
                          f"respect to argument number {argnum}. Its docstring:\n"
                          f"{getattr(fun, '__doc__', None)}")
        return nary_f
    return nary_operator


def get_name(f):
    return getattr(f, "__name__", "[unknown name]")
