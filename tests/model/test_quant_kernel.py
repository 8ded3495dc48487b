"""The quantized matmul (native/csrc/quant_matmul.c and its twin) against float64 references.

The bound each result must meet, per output y[m, n] = sum_i w[n, i] x[m, i]:
  * activation rounding: the kernel multiplies by x' = s * round(x / s), s = max|x| / 127 per 32
    values, so |x' - x| <= s / 2 and |y' - y| <= sum over blocks b of s_b / 2 * sum_(i in b) |w_i|;
  * float32 arithmetic: each block's integer dot product is exact; scaling it and summing the
    K / block terms rounds at most (K / block + 4) times, each by <= 2^-24 of the running sum of
    magnitudes, so |y_kernel - y'| <= (K / block + 4) * 2^-24 * sum_i |w_i x'_i|.
The first is the price of quantized activations (llama.cpp pays it too); the second is tested
alone against the exact float64 product with the kernel's own quantized activations.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

from deepinfer.model.quant import FORMATS, QuantWeight, native_available, quant_linear, quant_linear_twin
from deepinfer.model.quant import matmul
from deepinfer.model.quant.formats import quantize_asymmetric4, quantize_symmetric8, unpack_rows
from deepinfer.native import build
from quant_blocks import ALL_FORMATS, random_blocks, reference_dequantize

needs_kernel = pytest.mark.skipif(not native_available(), reason="the native kernel does not build here")
ROWS, COLS = 40, 512            # 40 output rows: two full 16-row panels and a padded one


def weight_of(name: str, seed: int = 0) -> tuple[QuantWeight, np.ndarray]:
    fmt = FORMATS[name]
    data = random_blocks(fmt, ROWS, COLS, np.random.default_rng(seed))
    return QuantWeight.pack(unpack_rows(fmt, data, ROWS, COLS)), reference_dequantize(fmt, data, ROWS, COLS)


def activations(m: int, seed: int = 1) -> torch.Tensor:
    x = torch.randn(m, COLS, generator=torch.Generator().manual_seed(seed))
    x[:, 64:96] *= 50.0     # blocks of very different magnitudes, and one of zeros
    x[:, 128:160] = 0.0
    return x


def bounds(x: torch.Tensor, w: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exact product with the kernel's quantized activations, activation-rounding bound, float32 bound)."""
    a, s = matmul.quantize_activations(x)
    x_q = (a.double().view(x.shape[0], -1, 32) * s.double()[..., None]).view(x.shape).numpy()
    exact_q = x_q @ w.T
    per_block = np.abs(w).reshape(ROWS, -1, 32).sum(-1)                       # [N, K / 32]
    rounding = (s.double().numpy() / 2 * (1 + 1e-5)) @ per_block.T
    arithmetic = (COLS // block + 4) * 2.0 ** -24 * (np.abs(x_q) @ np.abs(w).T)
    return exact_q, rounding, arithmetic


@needs_kernel
@pytest.mark.parametrize("name", ALL_FORMATS)
@pytest.mark.parametrize("m", [1, 3, 8, 13, 64])
def test_kernel_within_its_bound_of_the_float64_reference(name, m):
    weight, w = weight_of(name)
    x = activations(m)
    y = quant_linear(x, weight).double().numpy()
    exact_q, rounding, arithmetic = bounds(x, w, weight.block)
    assert np.all(np.abs(y - exact_q) <= arithmetic)
    reference = x.double().numpy() @ w.T
    assert np.all(np.abs(y - reference) <= rounding + arithmetic)
    # the bound means something: ~1% of the sum of the products' magnitudes (max|x| / 254 per
    # value against the mean |x| of a Gaussian block)
    assert np.median(rounding / (np.abs(x.double().numpy()) @ np.abs(w).T)) < 0.02


@pytest.mark.parametrize("name", ALL_FORMATS)
def test_twin_within_the_same_bound(name):
    weight, w = weight_of(name, seed=5)
    x = activations(9)
    y = quant_linear_twin(x, weight).double().numpy()
    exact_q, _, arithmetic = bounds(x, w, weight.block)
    assert np.all(np.abs(y - exact_q) <= arithmetic + (COLS + 4) * 2.0 ** -24 * np.abs(exact_q).max())


@needs_kernel
@pytest.mark.parametrize("name", ALL_FORMATS)
def test_rows_are_bitwise_the_same_in_any_batch(name):
    weight, _ = weight_of(name, seed=2)
    x = activations(64, seed=3)
    together = quant_linear(x, weight)
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 8, 9, 31):
        index = torch.from_numpy(rng.choice(64, size, replace=False))
        assert torch.equal(quant_linear(x[index], weight), together[index])
    torch.set_num_threads(1)
    assert torch.equal(quant_linear(x, weight), together)


@needs_kernel
def test_strided_rows_and_leading_dimensions():
    weight, _ = weight_of("Q4_1")
    x = activations(6)
    wide = torch.cat([x, torch.randn(6, 32)], dim=1)[:, :COLS]      # rows with a stride
    assert torch.equal(quant_linear(wide, weight), quant_linear(x, weight))
    assert torch.equal(quant_linear(x.view(2, 3, COLS), weight).view(6, ROWS), quant_linear(x, weight))


def _build_variant(tmp_path, flags: list[str]):
    """The kernel compiled with other flags (another instruction set), loaded beside the real one."""
    target = tmp_path / "quant_matmul_variant.so"
    build._compile("cc", build.SOURCES / "quant_matmul.c", target, [*flags, "-fopenmp", "-shared", "-fPIC", "-std=c11"])
    lib = ctypes.CDLL(str(target))
    for function, (argtypes, restype) in matmul._SIGNATURES.items():
        getattr(lib, function).argtypes, getattr(lib, function).restype = argtypes, restype
    return lib


def _run(lib, weight: QuantWeight, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], weight.rows)
    mins = weight.mins.data_ptr() if weight.mins is not None else None
    lib.quant_matmul(weight.data.data_ptr(), weight.scales.data_ptr(), mins, weight.bits, weight.block,
                     weight.offset, weight.rows, weight.cols, x.data_ptr(), x.stride(0), x.shape[0],
                     out.data_ptr(), torch.get_num_threads())
    return out


@needs_kernel
@pytest.mark.parametrize("flags", [["-O2", "-march=x86-64"], ["-O2", "-march=x86-64", "-mavx2", "-mfma"]],
                         ids=["portable", "avx2"])
def test_every_instruction_set_path_gives_bitwise_the_same_results(tmp_path, flags):
    try:
        lib = _build_variant(tmp_path, flags)
    except Exception as exc:  # no compiler for the variant: nothing to compare
        pytest.skip(f"variant does not build: {exc}")
    for name in ALL_FORMATS:
        weight, _ = weight_of(name, seed=4)
        x = activations(11)
        assert torch.equal(_run(lib, weight, x), quant_linear(x, weight)), name
    for quantize in (quantize_symmetric8, quantize_asymmetric4):
        weight = QuantWeight.pack(quantize(np.random.default_rng(2).standard_normal((24, 96)).astype(np.float32)))
        x = torch.randn(5, 96)
        assert torch.equal(_run(lib, weight, x), quant_linear(x, weight))
