"""Block-quantized weights on the CPU: GGUF's formats read as they are, int8/int4 made on load.

Owns the formats (formats.py: GGUF blocks -> unsigned integers, scales, mins), the packed layout
the native kernel reads (packed.py), the quantized matmul and its PyTorch twin (matmul.py), and
the quantized GGUF tensor source. Knows nothing about architectures: model/layers.py asks a
weight source for a quantized weight and multiplies through `quant_linear`.
"""

from deepinfer.model.quant.formats import FORMATS, BlockFormat, Unpacked
from deepinfer.model.quant.matmul import native_available, quant_linear, quant_linear_parts, quant_linear_twin
from deepinfer.model.quant.packed import QuantWeight, pack_fused

__all__ = ["FORMATS", "BlockFormat", "QuantWeight", "Unpacked", "native_available", "pack_fused", "quant_linear",
           "quant_linear_parts", "quant_linear_twin"]
