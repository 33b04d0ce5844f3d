"""The kernel cache: generated kernel source and machine code on disk, keyed by a hash.

Both routes keep their machine code in diffkit's cache folder (``$DIFFKIT_CACHE``, else
``~/.cache/diffkit``; a temporary folder where that is not writable): LLVM object files
named by the IR's hash (:mod:`.llvm_kernels`), and generated Python modules named by their
source's hash, beside which Numba's ``cache=True`` keeps its own (:mod:`.numba_kernels`,
:mod:`.scalar_vm`). A second process loads them instead of compiling again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

_modules: dict[str, Any] = {}  # source hash -> imported kernel module (this process)


def cache_dir() -> Path:
    """Where kernel sources, Numba's machine code beside them and LLVM object files are kept."""
    base = os.environ.get("DIFFKIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "diffkit")
    path = Path(base) / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        path = Path(tempfile.gettempdir()) / "diffkit-kernels"
        path.mkdir(parents=True, exist_ok=True)
        return path


def import_source(text: str) -> Any:
    """Import generated module source from a file in :func:`cache_dir` named by its hash
    (so Numba's ``cache=True`` keeps machine code beside it), once per process."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    if digest in _modules:
        return _modules[digest]
    path = cache_dir() / f"k_{digest}.py"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"diffkit_kernels_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    _modules[digest] = module
    return module
