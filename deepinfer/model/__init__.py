"""Transformer models: configs, layers, architectures and weight loading.

Owns the math of a forward pass (Llama-family and DeepSeek-V3-style MLA+MoE)
and reading weights from safetensors or GGUF. Knows nothing about requests,
scheduling, sampling or constraints; attention memory is reached only through
the `KVCache` protocol in `kv.py`.
"""

from deepinfer.model.config import ModelConfig
from deepinfer.model.decoder import Model
from deepinfer.model.layers import quantized_throughout
from deepinfer.model.loader import load_model

__all__ = ["Model", "ModelConfig", "load_model", "quantized_throughout"]
