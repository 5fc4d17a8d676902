"""Where the host time of a Python fastinfer call goes (torch CUDA tensors, tiny shapes).

    PYTHONPATH=build/python python3 python/bench/host_breakdown.py [--json out.json]

Each row is the median over batches of the mean of back-to-back calls of one piece of a call:
the extension call itself, the conversion of N array arguments (DLPack C exchange API vs
nanobind's Python-level DLPack import), the stream look-up (torch's Python API vs the extension),
the calling convention (keywords, positional), and the output allocation. Run on the GPU machine; the answers are
the numbers docs/BENCHMARKS.md quotes for the host-cost breakdown.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

import fastinfer
from fastinfer import _C

D = 128


def per_call_us(fn, batches=100, per_batch=200) -> float:
    for _ in range(50):
        fn()
    samples = []
    for _ in range(batches):
        torch.cuda.synchronize()  # each batch starts on an idle GPU: the host never waits for it
        t0 = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - t0) / per_batch * 1e6)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()

    dev = "cuda"
    t = torch.randn(4, D, device=dev, dtype=torch.bfloat16)
    tensors = [torch.randn(4, D, device=dev) for _ in range(12)]
    cpu = torch.zeros(4)
    stream = torch.cuda.Stream()
    handle = stream.cuda_stream
    rows = {}

    def row(name, fn, **kw):
        rows[name] = per_call_us(fn, **kw)
        print(f"{name:64s} {rows[name]:8.3f} us", flush=True)

    env = dict(python=sys.version.split()[0], torch=torch.__version__, cuda=torch.version.cuda,
               fastinfer=fastinfer.__version__, device=torch.cuda.get_device_name(0),
               torch_dlpack_attrs=[a for a in dir(torch.Tensor) if "dlpack" in a],
               c_exchange_api_cuda=_C._fast_import_available(t), c_exchange_api_cpu=_C._fast_import_available(cpu))
    print(json.dumps(env))

    with torch.cuda.stream(stream):
        row("python: empty lambda call", lambda: None)
        row("_C._convert() (extension call, no arrays)", lambda: _C._convert())
        for fast in (True, False):
            _C._set_fast_import(fast)
            tag = "C exchange API" if fast else "nanobind DLPack import"
            row(f"_C._convert(1 tensor) [{tag}]", lambda: _C._convert(t))
            row(f"_C._convert(4 tensors) [{tag}]", lambda: _C._convert(*tensors[:4]))
            row(f"_C._convert(12 tensors) [{tag}]", lambda: _C._convert(*tensors))
        _C._set_fast_import(True)
        row("t.__dlpack__() (torch, Python-level)", lambda: t.__dlpack__())
        row("torch.cuda.current_stream(t.device).cuda_stream", lambda: torch.cuda.current_stream(t.device).cuda_stream)
        row("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream)
        if hasattr(torch._C, "_cuda_getCurrentRawStream"):
            row("torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0))
        row("_C._resolve_stream(None, t) (current stream in C++)", lambda: _C._resolve_stream(None, t))
        row("_C._resolve_stream(int handle, t)", lambda: _C._resolve_stream(handle, t))
        row("_C._resolve_stream(torch.cuda.Stream, t)", lambda: _C._resolve_stream(stream, t))
        env["current_stream_matches_torch"] = _C._resolve_stream(None, t) == handle
        print("current stream resolved in C++ == torch's current stream:", env["current_stream_matches_torch"])
        row("torch.empty(1, 128, bf16, cuda)", lambda: torch.empty(1, D, device=dev, dtype=torch.bfloat16))
        row("torch.empty((1, 128), dtype=t.dtype, device=t.device)", lambda: torch.empty((1, D), dtype=t.dtype, device=t.device))
        x = torch.zeros(16, device=dev)
        row("torch x.add_(1) (one kernel through torch)", lambda: x.add_(1.0), per_batch=64)

        # One op (an extension function, no Python wrapper), by the way it is called.
        lin_packed = torch.randint(0, 256, (128, 64), dtype=torch.uint8).to(dev)
        lin_scales = torch.full((128, 8), 0x38, dtype=torch.uint8, device=dev)
        weights = fastinfer.prepare_bf16_fp4_weights(lin_packed, lin_scales, alpha=1.0, swizzled=False)
        a = torch.randn(1, 128, device=dev, dtype=torch.bfloat16)
        out = torch.empty(1, 128, device=dev, dtype=torch.bfloat16)
        for fast in (True, False):
            _C._set_fast_import(fast)
            tag = "C exchange API" if fast else "nanobind import"
            row(f"mm: fastinfer.mm_bf16_fp4(a, w, out, None, False, handle) (positional) [{tag}]",
                lambda: fastinfer.mm_bf16_fp4(a, weights, out, None, False, handle), per_batch=64)
            row(f"mm: fastinfer.mm_bf16_fp4(a, w, out=out, stream=handle) [{tag}]",
                lambda: fastinfer.mm_bf16_fp4(a, weights, out=out, stream=handle), per_batch=64)
            row(f"mm: fastinfer.mm_bf16_fp4(a, w, out=out) (current stream) [{tag}]",
                lambda: fastinfer.mm_bf16_fp4(a, weights, out=out), per_batch=64)
            row(f"mm: fastinfer.mm_bf16_fp4(a, w) (allocates out) [{tag}]",
                lambda: fastinfer.mm_bf16_fp4(a, weights), per_batch=64)
        _C._set_fast_import(True)
        d = dict(q=torch.randn(1, 1, 1, D, device=dev, dtype=torch.bfloat16),
                 k=torch.randn(1, 1, 1, D, device=dev, dtype=torch.bfloat16),
                 v=torch.randn(1, 1, 1, D, device=dev, dtype=torch.bfloat16), A_log=torch.rand(1, device=dev) - 1,
                 a=torch.randn(1, 1, 1, device=dev), dt_bias=torch.rand(1, device=dev),
                 b=torch.randn(1, 1, 1, device=dev), state=torch.randn(2, 1, D, D, device=dev) * 0.1,
                 initial_state_indices=torch.tensor([1], dtype=torch.int32, device=dev))
        o = torch.empty(1, 1, 1, D, device=dev, dtype=torch.bfloat16)
        for fast in (True, False):
            _C._set_fast_import(fast)
            tag = "C exchange API" if fast else "nanobind import"
            row(f"decode: gated_delta_rule_decode(**d, output=o, stream=handle) [{tag}]",
                lambda: fastinfer.gated_delta_rule_decode(**d, output=o, stream=handle), per_batch=64)
        _C._set_fast_import(True)  # the loop above ended with it off
        _C._set_release_gil(False)
        row("decode: gated_delta_rule_decode(**d, output=o, stream=handle) [GIL kept during the launch]",
            lambda: fastinfer.gated_delta_rule_decode(**d, output=o, stream=handle), per_batch=64)
        row("mm: fastinfer.mm_bf16_fp4(a, w, out=out, stream=handle) [GIL kept during the launch]",
            lambda: fastinfer.mm_bf16_fp4(a, weights, out=out, stream=handle), per_batch=64)
        _C._set_release_gil(True)
        row("decode: gated_delta_rule_decode(positional, output=o, stream=handle)",
            lambda: fastinfer.gated_delta_rule_decode(d["q"], d["k"], d["v"], d["state"], d["A_log"], d["a"],
                                                      d["dt_bias"], d["b"], None, o, True,
                                                      d["initial_state_indices"], None, None, False, handle),
            per_batch=64)
        _C._set_fast_import(True)
        stream.synchronize()

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(env=env, us=rows), f, indent=2)


if __name__ == "__main__":
    main()
