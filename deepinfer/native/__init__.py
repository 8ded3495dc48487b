"""Small C kernels, compiled on first use with the system's C compiler and called through ctypes.

Owns building, caching and loading them (`build.py`) and their C sources (`csrc/`). Each kernel
has a pure-PyTorch equivalent in the package that owns its arithmetic, used when no compiler is
found or `DEEPINFER_NATIVE=0`: the kernels make things faster, never possible. Knows nothing
about models, requests or constraints.
"""

from deepinfer.native.build import load_library

__all__ = ["load_library"]
