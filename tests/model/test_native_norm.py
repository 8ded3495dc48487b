"""The native float32 RMSNorm against PyTorch's, and its row independence."""

import pytest
import torch
import torch.nn.functional as F

from deepinfer.model.native_norm import _kernel, _swiglu_kernel, rms_norm_f32, swiglu_f32

needs_kernel = pytest.mark.skipif(_kernel() is None, reason="the native RMSNorm kernel does not build here")


@needs_kernel
@pytest.mark.parametrize("shape", [(1, 576), (37, 576), (512, 576), (5, 9, 64), (3, 17)])
def test_matches_pytorch(shape):
    gen = torch.Generator().manual_seed(len(shape) + shape[-1])
    x, w = torch.randn(*shape, generator=gen) * 3, torch.randn(shape[-1], generator=gen)
    out = rms_norm_f32(x, w, 1e-5)
    torch.testing.assert_close(out, F.rms_norm(x, (shape[-1],), w, 1e-5), rtol=1e-6, atol=1e-6)


@needs_kernel
def test_a_row_does_not_depend_on_the_others():
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(300, 576, generator=gen), torch.randn(576, generator=gen)
    assert torch.equal(rms_norm_f32(x, w, 1e-6)[123], rms_norm_f32(x[123:124].clone(), w, 1e-6)[0])


@needs_kernel
def test_strided_rows_give_the_same_bits_as_contiguous_ones():
    """A split view (rows strided) and its single-row slices (contiguous) must round alike."""
    gen = torch.Generator().manual_seed(1)
    both, w = torch.randn(9, 40, generator=gen), torch.randn(32, generator=gen)
    latent = both.split([32, 8], dim=-1)[0]                                   # [9, 32], row stride 40
    batched = rms_norm_f32(latent, w, 1e-6)
    for i in range(9):
        assert torch.equal(batched[i], rms_norm_f32(latent[i:i + 1], w, 1e-6)[0])
    torch.testing.assert_close(rms_norm_f32(latent.t().contiguous().t(), w, 1e-6), batched)  # column-major


@needs_kernel
def test_mismatched_shapes_raise_instead_of_reading_past_the_rows():
    with pytest.raises(ValueError):
        rms_norm_f32(torch.randn(3, 8), torch.ones(16), 1e-6)


def test_autograd_falls_back():
    assert rms_norm_f32(torch.randn(4, 8).requires_grad_(), torch.ones(8), 1e-6) is None


needs_swiglu = pytest.mark.skipif(_swiglu_kernel() is None, reason="the native SwiGLU kernel does not build here")


@needs_swiglu
@pytest.mark.parametrize("rows,width", [(1, 1536), (37, 1536), (5, 40), (3, 7)])
def test_swiglu_matches_pytorch(rows, width):
    gen = torch.Generator().manual_seed(rows * width)
    gate_up = torch.randn(rows, 2 * width, generator=gen) * 6          # wide enough to reach exp's tails
    gate_up[0, 0], gate_up[-1, width - 1] = -100.0, 100.0
    ref = F.silu(gate_up[:, :width]) * gate_up[:, width:]
    torch.testing.assert_close(swiglu_f32(gate_up, width), ref, rtol=2e-6, atol=1e-6)


@needs_swiglu
def test_swiglu_element_does_not_depend_on_the_tensor_size():
    gen = torch.Generator().manual_seed(5)
    gate_up = torch.randn(41, 2 * 23, generator=gen)
    batched = swiglu_f32(gate_up, 23)
    for i in (0, 17, 40):
        assert torch.equal(batched[i], swiglu_f32(gate_up[i:i + 1], 23)[0])


@needs_swiglu
def test_swiglu_mismatched_width_raises():
    with pytest.raises(ValueError):
        swiglu_f32(torch.randn(3, 10), 8)
