"""Which weights a `quantization` choice loads: "auto" picks the quantized GGUF where there is one.

    "auto"   a .gguf file, or a converted directory that kept its GGUF (the default model),
             loads that GGUF's quantized blocks ("gguf"); a Hugging Face directory loads float
    "gguf"   the same, and an error where there is no GGUF to keep quantized
    "int8", "int4"   quantize float weights on load (a GGUF's blocks stay as they are)
    None / "none"    today's float path: every weight dequantized to the model dtype

"auto" is the default because the quantized kernels are the faster path on the CPU for the
default model (benchmarks/quant_decode.py measures both; see model/quant/matmul.py).
"""

from __future__ import annotations

from pathlib import Path

from deepinfer.errors import ModelLoadError
from deepinfer.model.hub import kept_gguf
from deepinfer.model.quant.source import QUANTIZATIONS

CHOICES = ("auto", *QUANTIZATIONS, "none")


def resolve_quantization(path: str | Path, quantization: str | None) -> tuple[Path, str | None]:
    """(the file or directory to load, the quantization load_model takes) for a user's choice."""
    path = Path(path)
    if quantization in (None, "none"):
        return path, None
    if quantization not in CHOICES:
        raise ModelLoadError(f"quantization {quantization!r} is not one of {', '.join(CHOICES)}.")
    gguf = path if path.suffix.lower() == ".gguf" else kept_gguf(path) if path.is_dir() else None
    if quantization == "auto":
        return (gguf, "gguf") if gguf is not None else (path, None)
    if quantization == "gguf" and gguf is None:
        raise ModelLoadError(f"{path} is not a GGUF file and holds none to keep quantized; use quantization "
                             "'int8' or 'int4' to quantize its float weights on load, or None.")
    return (gguf if quantization == "gguf" else path), quantization
