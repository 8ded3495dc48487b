"""Small building blocks shared by the architectures: RMSNorm, SwiGLU MLP, embeddings.

Each block is an `nn.Module` without weights until `load(weights, prefix)` takes its
tensors, by their Hugging Face names, from a `Weights` source (see weights.py),
which checks names and shapes. Activations are [T, hidden]: flattened tokens, no
batch dimension. Numerics follow transformers 5.x (RMSNorm in float32, then the
weight multiplies in the model dtype).

bfloat16 models on a CPU without fast bfloat16 matmuls keep their projection weights as float32
copies of the bfloat16 values and multiply in float32 (`gemm_weight`, `linear`): activations
stay bfloat16 between layers, and the products of bfloat16 values are exact in float32, so
only the summation order differs from a bfloat16 GEMM (which accumulates in float32 too).

Block-quantized weights (model/quant: a GGUF's blocks, or int8/int4 made on load) multiply through
`quant_linear` when the weight source hands them out (`take_quantized`); fused parts keep one
quantized weight per run of parts in the same format.

Every projection, here and in the architectures, calls `F.linear` / `F.silu` /
`Tensor.sigmoid` looked up at call time: the engine's batch-invariant mode
(engine/invariance.py) swaps those functions, so never bind them at import.
"""

from __future__ import annotations

import functools
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from deepinfer import envs
from deepinfer.model.native_norm import rms_norm_f32, swiglu_f32
from deepinfer.model.quant import QuantWeight, Unpacked, pack_fused, quant_linear, quant_linear_parts


class Weights(Protocol):
    """Where modules take their tensors from (implemented in weights.py)."""

    dtype: torch.dtype

    def take(self, name: str, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor: ...

    def has(self, name: str) -> bool: ...

    def take_quantized(self, name: str, shape: tuple[int, ...]) -> Unpacked | None: ...


def _take_either(weights: Weights, name: str, shape: tuple[int, ...]) -> torch.Tensor | Unpacked:
    """The tensor in block-quantized form where the source holds it so, else as a float tensor."""
    quantized = weights.take_quantized(name, shape)
    return quantized if quantized is not None else weights.take(name, shape)


def frozen(t: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(t, requires_grad=False)


def gemm_layout(weight: torch.Tensor) -> torch.Tensor:
    """A [..., out, in] weight with the memory layout `F.linear` multiplies fastest here.

    F.linear(x, W) is x @ W^T. For float32, MKL runs 8-22% faster when W^T is row-major, i.e. when
    W is the transposed view of a contiguous [..., in, out] tensor (measured, 1 thread, SmolLM2-135M
    layer shapes cycling over 30 layers: M=32 93 -> 73 ms, M=160 250 -> 231 ms, M=512 719 -> 661 ms).
    bfloat16 (oneDNN) is 3-6% slower that way, so it keeps the checkpoint's layout. Values and
    shape are unchanged; only strides differ.
    """
    if weight.dtype != torch.float32 or weight.dim() < 2:
        return weight
    return weight.transpose(-1, -2).contiguous().transpose(-1, -2)


BF16_GEMM_ENV = envs.BF16_GEMM.name   # auto, native or float32 (envs.py says what each means)
BF16_GEMM_CHOICES = envs.BF16_GEMM.choices


@functools.cache
def _cpu_has_amx_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return any(line.startswith("flags") and " amx_bf16" in line for line in f)
    except OSError:
        return False


def bf16_gemm_in_float32(device: torch.device) -> bool:
    """Whether bfloat16 projections multiply in float32 on `device`.

    Why: torch's CPU bfloat16 matmul runs at ~166 GFLOPS on this project's AVX-512 machines
    against ~297 for float32 (2 threads, [512, 576] x [576, 3072]); only AMX makes bfloat16 the
    faster one. The float32 copy doubles the projection weights' memory.
    """
    choice = envs.BF16_GEMM.choice()
    if choice != "auto":
        return choice == "float32"
    return torch.device(device).type == "cpu" and not _cpu_has_amx_bf16()


def gemm_weight(weight: torch.Tensor) -> torch.Tensor:
    """The [..., out, in] tensor `linear` multiplies by: float32 values of a bfloat16 weight
    where bf16_gemm_in_float32 says so, in gemm_layout."""
    if weight.dtype == torch.bfloat16 and weight.dim() >= 2 and bf16_gemm_in_float32(weight.device):
        weight = weight.float()
    return gemm_layout(weight)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear in the weight's dtype, returned in x's dtype (a float32 `gemm_weight` of a bfloat16
    model: x [..., in] widened exactly, the result rounded back once, as a bfloat16 GEMM would)."""
    if weight.dtype == x.dtype:
        return F.linear(x, weight, bias)
    return F.linear(x.to(weight.dtype), weight, bias).to(x.dtype)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x [..., D] normalized in float32, cast back, then scaled by weight [D]."""
    dtype = x.dtype
    if dtype == torch.float32 and weight.dtype == torch.float32 and weight.dim() == 1:
        # One fused kernel instead of five passes: the native one-pass kernel where it builds
        # (native_norm.py), else PyTorch's fused one (bitwise equal to the five passes here).
        out = rms_norm_f32(x, weight, eps)
        return out if out is not None else F.rms_norm(x, weight.shape, weight, eps)
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def load(self, weights: Weights, prefix: str) -> None:
        self.weight = frozen(weights.take(prefix + "weight", (self.dim,)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


class Linear(nn.Module):
    """y = x W^T (+ b) over one or several checkpoint matrices fused along the output.

    Fusing (q, k, v) or (gate, up) into one matmul saves kernel launches per token;
    `parts` names each checkpoint tensor with its number of output rows.
    """

    def __init__(self, in_features: int, parts: dict[str, int], bias: bool = False) -> None:
        super().__init__()
        self.in_features, self.parts, self.has_bias = in_features, parts, bias
        self.out_features = sum(parts.values())

    def load(self, weights: Weights, prefix: str) -> None:
        mats = [_take_either(weights, f"{prefix}{name}.weight", (rows, self.in_features))
                for name, rows in self.parts.items()]
        self.quantized: list[QuantWeight] | None = None
        self.weight = None
        if all(isinstance(m, Unpacked) for m in mats):
            self.quantized = pack_fused(mats)
        else:  # a float part among quantized ones: all float (block values dequantize exactly)
            mats = [torch.from_numpy(m.dequantize()).to(weights.dtype) if isinstance(m, Unpacked) else m
                    for m in mats]
            self.weight = frozen(gemm_weight(mats[0] if len(mats) == 1 else torch.cat(mats)))  # [out, in] values
        self.bias = None
        if self.has_bias:
            vecs = [weights.take(f"{prefix}{name}.bias", (rows,)) for name, rows in self.parts.items()]
            dtype = torch.float32 if self.weight is None else self.weight.dtype
            self.bias = frozen((vecs[0] if len(vecs) == 1 else torch.cat(vecs)).to(dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.quantized is not None:
            return quant_linear_parts(x, self.quantized, self.bias)
        return linear(x, self.weight, self.bias)


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)), with gate and up fused into one matmul."""

    def __init__(self, hidden: int, intermediate: int, bias: bool = False) -> None:
        super().__init__()
        self.intermediate = intermediate
        self.gate_up = Linear(hidden, {"gate_proj": intermediate, "up_proj": intermediate}, bias)
        self.down = Linear(intermediate, {"down_proj": hidden}, bias)

    def load(self, weights: Weights, prefix: str) -> None:
        self.gate_up.load(weights, prefix)
        self.down.load(weights, prefix)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate_up = self.gate_up(x)
        if gate_up.dtype == torch.float32 and gate_up.dim() == 2:
            gated = swiglu_f32(gate_up, self.intermediate)  # one native pass where it builds
            if gated is not None:
                return self.down(gated)
        gate, up = gate_up.split(self.intermediate, dim=-1)
        return self.down(F.silu(gate).mul_(up))  # silu's result is ours: multiply in place


class Embedding(nn.Module):
    """Token embedding and the vocabulary projection, sharing one matrix when tied.

    Tied when the config says so, or when the checkpoint has no lm_head (GGUF files
    and some exports drop the duplicate).
    """

    def __init__(self, vocab_size: int, hidden: int, tied: bool) -> None:
        super().__init__()
        self.vocab_size, self.hidden, self.tied = vocab_size, hidden, tied

    def load(self, weights: Weights, embed_name: str, head_name: str) -> None:
        shape = (self.vocab_size, self.hidden)
        embed, head = _take_either(weights, embed_name, shape), None
        if weights.has(head_name):  # (transformers ignores a stored lm_head when the config ties them)
            head = _take_either(weights, head_name, shape)
        else:
            self.tied = True
        # The vocabulary projection is the largest matmul of a decode step; in gemm_layout it is
        # faster (float32, 1 thread, SmolLM2, other weights read in between: 43 rows 31 -> 26 ms,
        # 77 rows 42 -> 39 ms). A tied matrix keeps one copy, in that layout; embed_tokens then
        # gathers its columns (~0.2 ms for 50 tokens, ~1 ms for 512). A quantized one stays
        # quantized: embed_tokens dequantizes the rows it gathers.
        self.dtype = weights.dtype  # of the activations (a bfloat16 head may multiply in float32)
        self.head, self.head_q = self._matrix(embed if self.tied else head, gemm_weight)
        self.embed, self.embed_q = (self.head, self.head_q) if self.tied else self._matrix(embed, lambda t: t)

    @staticmethod
    def _matrix(m: torch.Tensor | Unpacked, layout) -> tuple[nn.Parameter | None, QuantWeight | None]:
        return (None, QuantWeight.pack(m)) if isinstance(m, Unpacked) else (frozen(layout(m)), None)

    def embed_tokens(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.embed_q is not None:
            return self.embed_q.dequantize_rows(input_ids).to(self.dtype)  # [T, hidden]
        if self.embed.stride(-1) != 1:  # [vocab, hidden] viewed from a contiguous [hidden, vocab]
            rows = self.embed.t().index_select(1, input_ids).t().contiguous()  # [T, hidden]
        else:
            rows = F.embedding(input_ids, self.embed)  # [T, hidden]
        return rows.to(self.dtype)  # (exact: float32 copies hold bfloat16 values)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        # [N, vocab] float32. A float32 head of a bfloat16 model skips rounding to bfloat16 and back
        # (two passes over N x vocab, ~3 ms a decode step): the engine samples from float32 anyway.
        if self.head_q is not None:
            return quant_linear(hidden, self.head_q)
        return F.linear(hidden.to(self.head.dtype), self.head).float()


def quantized_throughout(model: nn.Module) -> bool:
    """Whether every matrix of `model` runs on quantized blocks: some `QuantWeight` and no float
    parameter of two or more dimensions (norm scales and biases are vectors). The quantized kernel
    reduces each output row in an order fixed by the shapes, so such a model's forward pass gives a
    token the same logits in any batch (the engine's batch-invariant mode is then nearly free)."""
    if any(p.dim() >= 2 for p in model.parameters()):
        return False
    return any(isinstance(q, QuantWeight) for m in model.modules()
               for q in (getattr(m, "quantized", None) or [getattr(m, "head_q", None)]))
