"""Which builder makes which architecture: the plain mapping from config `architectures[0]`.

SmolLM2 is a `LlamaForCausalLM`. To add an architecture, add its config parsing in
config.py and a line here.
"""

from __future__ import annotations

from deepinfer.model.deepseek import build_deepseek_v3
from deepinfer.model.deepseek_v4 import DeepseekV4Model
from deepinfer.model.llama import build_llama

ARCHITECTURES = {
    "LlamaForCausalLM": build_llama,
    "MistralForCausalLM": build_llama,
    "Qwen2ForCausalLM": build_llama,
    "Qwen3ForCausalLM": build_llama,
    "DeepseekV3ForCausalLM": build_deepseek_v3,
    "DeepseekV4ForCausalLM": DeepseekV4Model,
}
