"""Weight-only quantized matmul on the CPU: PyTorch's and torchao's operators vs float32 vs deepinfer's.

    python benchmarks/quant_ops.py --threads 2 [--torchao-path DIR] [--json PATH]

For SmolLM2-135M's projection shapes (out x in) at M = 1, 8, 32 and 512 activation rows, the
time of y = x W^T with W in float32 (`F.linear`, MKL), as PyTorch's int8 per-channel
(`_weight_int8pack_mm`) and int4 group-32 (`_weight_int4pack_mm_for_cpu`) weight-only operators,
torchao's int8 dynamic-activation/int8-weight linear (when torchao imports; `--torchao-path`
puts a separately installed copy on the path, so it never replaces this environment's torch),
and deepinfer's native kernel (deepinfer/model/quant) on Q4_1's and Q8_0's schemes. Each weight is replicated
so that the copies cycled through exceed the L2 cache, as a model's layers do; best of repeats.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F

from result_json import add_json_argument, for_script

SHAPES = ((576, 576), (1536, 576), (576, 1536), (49152, 576))   # (out, in)
ROWS = (1, 8, 32, 512)


def best_time(run, copies: int, repeats: int) -> float:
    """Best mean seconds per call over `repeats` sweeps of the `copies` weights."""
    run(0)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(copies):
            run(i)
        best = min(best, (time.perf_counter() - start) / copies)
    return best


def float32_op(w: torch.Tensor):
    wt = w.t().contiguous().t()   # the layout deepinfer multiplies in (layers.gemm_layout)
    return lambda x: F.linear(x, wt)


def int8pack_op(w: torch.Tensor):
    scale = w.abs().amax(1) / 127
    q = torch.round(w / scale[:, None]).to(torch.int8)
    return lambda x: torch.ops.aten._weight_int8pack_mm(x, q, scale)


def int4pack_op(w: torch.Tensor):
    n, k = w.shape
    groups = w.reshape(n, k // 32, 32)
    lo, hi = groups.amin(-1), groups.amax(-1)
    scale = ((hi - lo) / 15).clamp_min(1e-8)
    q = torch.round((groups - lo[..., None]) / scale[..., None]).clamp(0, 15).to(torch.int32).reshape(n, k)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 8)
    # scales_and_zeros [k/32, n, 2]: value = (q - 8) * scale + zero, so zero = lo + 8 * scale
    sz = torch.stack([scale, lo + 8 * scale], -1).transpose(0, 1).contiguous()
    return lambda x: torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, 32, sz)


def torchao_op(w: torch.Tensor):
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    lin.weight.data.copy_(w)
    quantize_(lin, Int8DynamicActivationInt8WeightConfig())
    return lambda x: lin(x)


def deepinfer_op(kind: str):
    def make(w: torch.Tensor):
        from deepinfer.model.quant import QuantWeight, quant_linear
        from deepinfer.model.quant.formats import quantize_asymmetric4, quantize_symmetric8

        quantize = quantize_asymmetric4 if kind == "q4_1" else quantize_symmetric8
        weight = QuantWeight.pack(quantize(w.numpy()))
        return lambda x: quant_linear(x, weight)
    return make


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--torchao-path", default=None, help="a directory holding a torchao install")
    p.add_argument("--ops", default="float32,int8pack,int4pack,torchao,q4_1,q8_0")
    add_json_argument(p)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.torchao_path:
        sys.path.insert(0, args.torchao_path)
    makers = {"float32": float32_op, "int8pack": int8pack_op, "int4pack": int4pack_op, "torchao": torchao_op,
              "q4_1": deepinfer_op("q4_1"), "q8_0": deepinfer_op("q8_0")}
    ops = [o for o in args.ops.split(",") if o]
    results = for_script(__file__, __doc__)
    rows = []
    for n, k in SHAPES:
        copies = max(2, (48 << 20) // (n * k * 4))
        weights = [torch.randn(n, k) * 0.05 for _ in range(copies)]
        for op in ops:
            try:
                runs = [makers[op](w) for w in weights]
            except Exception as exc:  # an operator or package this torch build lacks
                print(f"{op}: unavailable ({type(exc).__name__}: {str(exc)[:120]})", flush=True)
                continue
            for m in ROWS:
                x = torch.randn(m, k)
                with torch.no_grad():
                    seconds = best_time(lambda i: runs[i](x), copies, args.repeats)
                rows.append([f"{n}x{k}", m, op, round(seconds * 1e6, 1)])
                print(rows[-1], flush=True)
            del runs
    results.table(f"y = x W^T, microseconds per call ({args.threads} threads)", ["W (out x in)", "M", "op", "us"], rows)
    results.write(args.json)


if __name__ == "__main__":
    main()
