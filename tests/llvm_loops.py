"""Compiled loops out[i] = f(in[i]) over diffkit's vector_math functions or the C
library's (for tests/test_vector_math.py and benchmarks/vector_math.py), and ULP distances."""

import ctypes

import numpy as np

from diffkit.compiler import vector_math
from diffkit.compiler.llvm_kernels import machine

LOOP = """define void @{symbol}(ptr %in, ptr %out, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %p = getelementptr double, ptr %in, i64 %i
  %v = load double, ptr %p
  %r = call double @{callee}(double %v)
  %q = getelementptr double, ptr %out, i64 %i
  store double %r, ptr %q
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""
_loops: dict = {}


def elementwise(name: str, ours: bool):
    """A compiled loop out[i] = name(in[i]): diffkit's function or the C library's."""
    key = (name, ours)
    if key not in _loops:
        llvm, tm, engine = machine()
        symbol = f"test_loop_{name}_{'diffkit' if ours else 'libm'}"
        ir = LOOP.format(symbol=symbol, callee=vector_math.CALLS[name] if ours else name)
        ir += (vector_math.definitions([name]) + "\n".join(vector_math.DECLARATIONS) if ours
               else f"declare double @{name}(double)\n")
        module = llvm.parse_assembly(ir)
        module.triple, module.data_layout = tm.triple, str(tm.target_data)
        module.verify()
        passes = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
        passes.getModulePassManager().run(module, passes)
        engine.add_module(module)
        engine.finalize_object()
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
            engine.get_function_address(symbol))

        def run(x):
            x = np.ascontiguousarray(x, np.float64)
            out = np.empty_like(x)
            fn(x.ctypes.data, out.ctypes.data, x.size)
            return out

        run.ir = str(module)
        _loops[key] = run
    return _loops[key]


def ulps(a, b):
    """ULPs between doubles of the same sign (0 where both are NaN)."""
    ia, ib = a.view(np.int64), b.view(np.int64)
    ia = np.where(ia < 0, np.int64(-2**63) - ia, ia)
    ib = np.where(ib < 0, np.int64(-2**63) - ib, ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ia - ib))
