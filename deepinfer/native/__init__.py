"""Small C kernels, compiled on first use with the system's C compiler and called through ctypes.

Owns the table of every kernel (`kernels.py`: sources, Python twin, load status), building,
caching and loading them (`build.py`) and their C sources (`csrc/`). Each kernel has a Python
twin in the package that owns its arithmetic, used when no compiler is found, the build fails
or `DEEPINFER_NATIVE=0`: the kernels make things faster, never possible. Must not know models,
requests, constraints or any stage that calls it (the table names twins, it never imports them).
"""

from .kernels import KERNELS, Kernel, KernelStatus, load_library, status, statuses

__all__ = ["KERNELS", "Kernel", "KernelStatus", "load_library", "status", "statuses"]
