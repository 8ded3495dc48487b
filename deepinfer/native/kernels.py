"""Every C kernel of the package, declared once: its sources, its Python twin, whether it loaded.

A kernel is `csrc/<name>.c` (plus the csrc headers it includes), loaded through `load_library`
by one module of the stage that owns its arithmetic. Its twin is the Python code that stage
runs instead where the kernel cannot be built (no compiler, DEEPINFER_NATIVE=0, a failed
build), and that its tests compare it against: the kernels make things faster, never possible,
and give the same results. `status` says, per kernel, whether it is built and loaded or falls
back and why (`deepinfer doctor` prints it). The twins are named, not imported: this package
knows nothing of the stages that call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import build


@dataclass(frozen=True)
class Kernel:
    name: str                   # csrc/<name>.c and the library's name
    headers: tuple[str, ...]    # csrc headers it includes, directly or not
    openmp: bool                # threads on PyTorch's OpenMP runtime (loading it imports torch)
    caller: str                 # the module that loads it
    twin: str                   # what runs where the kernel cannot: module or module:attribute
    purpose: str

    @property
    def sources(self) -> tuple[str, ...]:
        return (f"{self.name}.c", *self.headers)


KERNELS: dict[str, Kernel] = {k.name: k for k in (
    Kernel("rms_norm", (), True, "deepinfer.model.native_norm", "torch.nn.functional:rms_norm",
           "float32 RMSNorm in one pass"),
    Kernel("swiglu", ("fast_exp.h",), True, "deepinfer.model.native_norm", "deepinfer.model.layers:SwiGLU",
           "float32 silu(gate) * up in one pass"),
    Kernel("paged_decode", ("paged_decode_avx512.h", "paged_decode_portable.h", "fast_exp.h"), True,
           "deepinfer.kvcache.native_decode", "deepinfer.kvcache.decode",
           "decode attention reading the paged KV pool in place"),
    Kernel("quant_matmul", (), True, "deepinfer.model.quant.matmul",
           "deepinfer.model.quant.matmul:quant_linear_twin", "x W^T over block-quantized weights (GGUF, int8/int4)"),
    Kernel("nfa_build", ("int_vec.h",), False, "deepinfer.constraints.regular.native_nfa",
           "deepinfer.constraints.regular.nfa:build_nfa", "Thompson construction of an expression's NFA"),
    Kernel("dfa_subset", ("int_vec.h",), False, "deepinfer.constraints.regular.native_subset",
           "deepinfer.constraints.regular.dfa:determinize", "subset construction of a DFA"),
    Kernel("dfa_tables", (), False, "deepinfer.constraints.regular.native_subset",
           "deepinfer.constraints.regular.minimize", "live states, Moore refinement, BFS order of a DFA table"),
    Kernel("mask_bits", (), False, "deepinfer.constraints.regular.mask_bits",
           "deepinfer.constraints.regular.mask_bits:or_ids", "setting token ids' bits in a mask row"),
    Kernel("dfa_keys", (), False, "deepinfer.constraints.cfg.scan.native_keys",
           "deepinfer.constraints.cfg.scan.tables:small_sub_dfa_key", "language keys of DFA states"),
    Kernel("token_trie", (), False, "deepinfer.constraints.cfg.scan.native_walks",
           "deepinfer.constraints.cfg.scan.walks", "walks of the vocabulary's token trie"),
)}


@dataclass(frozen=True)
class KernelStatus:
    kernel: Kernel
    state: str                  # "built" (loaded), "fallback" (its twin runs) or "not loaded" (not asked yet)
    reason: str = ""            # why it falls back
    library: Path | None = None

    @property
    def built(self) -> bool:
        return self.state == "built"


def declared(name: str) -> Kernel:
    kernel = KERNELS.get(name)
    if kernel is None:
        raise ValueError(f"no native kernel {name!r} is declared in native/kernels.py")
    return kernel


def load_library(name: str, signatures: dict[str, tuple[list, object]] | None = None,
                 openmp: bool | None = None):
    """The loaded kernel (a ctypes.CDLL), or None where its twin must run (see `build.load_library`).
    `openmp` is the table's; a caller that says otherwise is a programming error."""
    kernel = declared(name)
    if openmp is not None and openmp != kernel.openmp:
        raise ValueError(f"native kernel {name} is declared with openmp={kernel.openmp}")
    return build.load_library(name, signatures, kernel.openmp)


def status(name: str, probe: bool = False) -> KernelStatus:
    """Whether the kernel is loaded in this process; with `probe`, building and loading it first
    if nothing asked for it yet."""
    kernel = declared(name)
    found = build.probe(name, kernel.openmp) if probe else build.outcome(name)
    if found is None:
        return KernelStatus(kernel, "not loaded")
    if found.library is None:
        return KernelStatus(kernel, "fallback", found.reason)
    return KernelStatus(kernel, "built", library=found.library)


def statuses(probe: bool = False) -> list[KernelStatus]:
    return [status(name, probe) for name in KERNELS]
