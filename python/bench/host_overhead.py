"""Python per-call host cost of every fastinfer op on tiny shapes (torch CUDA tensors), and the
cold start of each op (first call in a fresh interpreter, import included).

    PYTHONPATH=build/python python3 python/bench/host_overhead.py --json out.json [--cpp bench.json]

Two variants per op: the public function with every output preallocated and the stream passed
(what a serving loop does), and the same function left to allocate its outputs and look up
torch's current stream. With --cpp (the JSON of `fastinfer_bench host_overhead`) the table also
shows the C++ host cost of the same op and the raw cudaLaunchKernel cost measured there.
Timing: the median over batches of the mean of 64 back-to-back calls, each batch started on an
idle stream so that the host never waits for the GPU. The last column splits a call into its C++
and Python shares inside this process (`in_process_split`), which does not depend on two
processes (C++ bench, this script) running alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import fastinfer
from fastinfer import _C

D = 128
BATCHES = 200
PER_BATCH = 64
SHORT_BATCH = 8  # as the C++ bench: a check that queued GPU work (CP 1x1024) does not skew a long batch
REPEAT = 8  # C++ calls per Python call in the in-process split (8 x 8 = the C++ bench's 64-call batch)


def batch_us(fn, stream, per_batch, untimed_first=False) -> float:
    """Mean host us per call of `per_batch` back-to-back calls started on an idle stream."""
    stream.synchronize()
    if untimed_first:
        fn()
    t0 = time.perf_counter()
    for _ in range(per_batch):
        fn()
    return (time.perf_counter() - t0) / per_batch * 1e6


def host_us(fn, stream, batches=BATCHES, per_batch=PER_BATCH) -> float:
    for _ in range(16):
        fn()
    per_call = [batch_us(fn, stream, per_batch) for _ in range(batches)]
    stream.synchronize()
    return statistics.median(per_call)


def in_process_split(fn, stream, batches, repeat=REPEAT):
    """The C++ share of one call and the Python share, both measured in this process: t1 = a call
    as it is, tn = a call whose C++ op runs `repeat` times back to back (_C._set_launch_repeat, as
    the C++ bench's loop runs it); C++ = (tn - t1) / (repeat - 1), Python - C++ = t1 - C++. A
    cross-check needs no subtraction: t0 = a call whose C++ op does not run at all (repeat 0:
    argument conversion, output allocation and the GIL release only). The three kinds of batch
    alternate and each round gives one estimate (the medians are returned), so drift of the host
    or of the GPU backlog during the run hits all alike. Short batches keep the GPU backlog near
    the C++ bench's 64 calls. Each batch starts with one untimed call: a fixed cost F of the first
    call after an idle stream would otherwise count as F / 8 in the Python share (t1 and t8 both
    carry F / 8 per Python call, so C++ = their difference drops it)."""
    for _ in range(16):
        fn()
    cpp, py, py_only = [], [], []
    try:
        for _ in range(batches):
            t = {}
            for n in (0, 1, repeat):
                _C._set_launch_repeat(n)
                t[n] = batch_us(fn, stream, SHORT_BATCH, untimed_first=True)
            c = (t[repeat] - t[1]) / (repeat - 1)
            cpp.append(c)
            py.append(t[1] - c)
            py_only.append(t[0])
    finally:
        _C._set_launch_repeat(1)
        stream.synchronize()
    return statistics.median(cpp), statistics.median(py), statistics.median(py_only)


def make_cases(stream, only=None):
    """(key, name, preallocated-call, allocating-call) for every op, or only for the op `only` (a
    cold-start child then runs nothing of another op first); keys match the C++ bench."""
    dev = "cuda"
    s = stream.cuda_stream
    bf16 = torch.bfloat16
    cases = []

    def want(*keys):
        return only is None or only in keys

    if want("prefill", "prefill_state"):
        q, k, v = (torch.randn(64, 1, D, device=dev, dtype=bf16) for _ in range(3))
        cu = torch.tensor([0, 64], dtype=torch.int32, device=dev)
        g = torch.rand(64, 1, device=dev) * 0.1 + 0.9
        beta = torch.rand(64, 1, device=dev)
        out = torch.empty(64, 1, D, device=dev, dtype=bf16)
        pool = torch.randn(2, 1, D, D, device=dev) * 0.1
        idx = torch.tensor([1], dtype=torch.int32, device=dev)
        cases.append(("prefill", "chunk_gated_delta_rule 1x64 heads 1/1/1",
                      lambda: fastinfer.chunk_gated_delta_rule(q, k, v, g=g, beta=beta, cu_seqlens=cu, output=out,
                                                               stream=s),
                      lambda: fastinfer.chunk_gated_delta_rule(q, k, v, g=g, beta=beta, cu_seqlens=cu)))
        cases.append(("prefill_state", "chunk_gated_delta_rule 1x64, pool state",
                      lambda: fastinfer.chunk_gated_delta_rule(q, k, v, g=g, beta=beta, cu_seqlens=cu, output=out,
                                                               initial_state=pool, output_state=pool,
                                                               state_indices=idx, stream=s),
                      lambda: fastinfer.chunk_gated_delta_rule(q, k, v, g=g, beta=beta, cu_seqlens=cu,
                                                               initial_state=pool, output_state=pool,
                                                               state_indices=idx)))

    # Older packages had no use_cp keyword; chunk_gated_delta_rule is an extension function now, which
    # inspect.signature cannot read, so ask its docstring.
    has_cp = "use_cp" in (fastinfer.chunk_gated_delta_rule.__doc__ or "")
    if has_cp and want("prefill_cp", "prefill_cp_state"):
        t = 1024
        cq, ck, cv = (torch.randn(t, 1, D, device=dev, dtype=bf16) for _ in range(3))
        ccu = torch.tensor([0, t], dtype=torch.int32, device=dev)
        cg = torch.rand(t, 1, device=dev) * 0.1 + 0.9
        cbeta = torch.rand(t, 1, device=dev)
        cout = torch.empty(t, 1, D, device=dev, dtype=bf16)
        cpool = torch.randn(2, 1, D, D, device=dev) * 0.1
        cidx = torch.tensor([1], dtype=torch.int32, device=dev)
        cases.append(("prefill_cp", "chunk_gated_delta_rule CP 1x1024 heads 1/1/1",
                      lambda: fastinfer.chunk_gated_delta_rule(cq, ck, cv, g=cg, beta=cbeta, cu_seqlens=ccu, output=cout,
                                                               use_cp=True, max_seqlen=t, stream=s),
                      lambda: fastinfer.chunk_gated_delta_rule(cq, ck, cv, g=cg, beta=cbeta, cu_seqlens=ccu,
                                                               use_cp=True, max_seqlen=t)))
        cases.append(("prefill_cp_state", "chunk_gated_delta_rule CP 1x1024, pool state",
                      lambda: fastinfer.chunk_gated_delta_rule(cq, ck, cv, g=cg, beta=cbeta, cu_seqlens=ccu, output=cout,
                                                               initial_state=cpool, output_state=cpool,
                                                               state_indices=cidx, use_cp=True, max_seqlen=t, stream=s),
                      lambda: fastinfer.chunk_gated_delta_rule(cq, ck, cv, g=cg, beta=cbeta, cu_seqlens=ccu,
                                                               initial_state=cpool, output_state=cpool,
                                                               state_indices=cidx, use_cp=True, max_seqlen=t)))

    def decode_args(t):
        return dict(q=torch.randn(1, t, 1, D, device=dev, dtype=bf16), k=torch.randn(1, t, 1, D, device=dev, dtype=bf16),
                    v=torch.randn(1, t, 1, D, device=dev, dtype=bf16), A_log=torch.rand(1, device=dev) - 1,
                    a=torch.randn(1, t, 1, device=dev), dt_bias=torch.rand(1, device=dev),
                    b=torch.randn(1, t, 1, device=dev), state=torch.randn(2, 1, D, D, device=dev) * 0.1,
                    initial_state_indices=torch.tensor([1], dtype=torch.int32, device=dev))

    # Decode arguments by keyword, as a serving loop writes the call (a `**dict` splat would add the
    # dict merge, ~0.3 us of Python itself; host_breakdown.py has that row).
    if want("decode"):
        d1 = decode_args(1)
        q1, k1, v1, pool1, A1, a1, dt1, b1, i1 = (d1[n] for n in ("q", "k", "v", "state", "A_log", "a", "dt_bias", "b",
                                                               "initial_state_indices"))
        o1 = torch.empty(1, 1, 1, D, device=dev, dtype=bf16)
        cases.append(("decode", "gated_delta_rule_decode B1 T1 heads 1/1",
                      lambda: fastinfer.gated_delta_rule_decode(q=q1, k=k1, v=v1, state=pool1, A_log=A1, a=a1,
                                                                dt_bias=dt1, b=b1, initial_state_indices=i1,
                                                                output=o1, stream=s),
                      lambda: fastinfer.gated_delta_rule_decode(q=q1, k=k1, v=v1, state=pool1, A_log=A1, a=a1,
                                                                dt_bias=dt1, b=b1, initial_state_indices=i1)))
    if want("decode_mtp"):
        d2 = decode_args(2)
        q2, k2, v2, pool2, A2, a2, dt2, b2, i2 = (d2[n] for n in ("q", "k", "v", "state", "A_log", "a", "dt_bias", "b",
                                                               "initial_state_indices"))
        o2 = torch.empty(1, 2, 1, D, device=dev, dtype=bf16)
        inter = torch.empty(1, 2, 1, D, D, device=dev)
        cases.append(("decode_mtp", "gated_delta_rule_mtp B1 T2, intermediate states",
                      lambda: fastinfer.gated_delta_rule_mtp(q=q2, k=k2, v=v2, state=pool2, A_log=A2, a=a2,
                                                             dt_bias=dt2, b=b2, initial_state_indices=i2, output=o2,
                                                             intermediate_states=inter, disable_state_update=True,
                                                             stream=s),
                      lambda: fastinfer.gated_delta_rule_mtp(q=q2, k=k2, v=v2, state=pool2, A_log=A2, a=a2,
                                                             dt_bias=dt2, b=b2, initial_state_indices=i2,
                                                             intermediate_states=inter, disable_state_update=True)))

    w = torch.randn(128, 128, device=dev, dtype=bf16)
    if want("quantize"):
        packed = torch.empty(128, 64, device=dev, dtype=torch.uint8)
        scales = torch.empty(128 * 8, device=dev, dtype=torch.uint8)  # 128x4 swizzled: round_up(N,128) x round_up(K/16,4)
        cases.append(("quantize", "nvfp4_quantize 128x128 swizzled",
                      lambda: fastinfer.nvfp4_quantize(w, 1.0, swizzled=True, packed=packed, scales=scales, stream=s),
                      lambda: fastinfer.nvfp4_quantize(w, 1.0, swizzled=True)))
    if want("dequantize", "mm_bf16_fp4", "mm_bf16_fp4_pdl"):
        # Inputs made on the host (no quantize kernel runs first in a cold-start child).
        lin_packed = torch.randint(0, 256, (128, 64), dtype=torch.uint8).to(dev)
        lin_scales = torch.full((128, 8), 0x38, dtype=torch.uint8, device=dev)  # e4m3 1.0
    if want("dequantize"):
        deq = torch.empty(128, 128, device=dev, dtype=bf16)
        cases.append(("dequantize", "nvfp4_dequantize 128x128 linear",
                      lambda: fastinfer.nvfp4_dequantize(lin_packed, lin_scales, 1.0, swizzled=False, out=deq, stream=s),
                      lambda: fastinfer.nvfp4_dequantize(lin_packed, lin_scales, 1.0, swizzled=False, dtype=bf16)))
    if want("mm_bf16_fp4", "mm_bf16_fp4_pdl"):
        weights = fastinfer.prepare_bf16_fp4_weights(lin_packed, lin_scales, alpha=1.0, swizzled=False)
        a = torch.randn(1, 128, device=dev, dtype=bf16)
        mm_out = torch.empty(1, 128, device=dev, dtype=bf16)
        cases.append(("mm_bf16_fp4", "mm_bf16_fp4 M1 N128 K128",
                      lambda: fastinfer.mm_bf16_fp4(a, weights, out=mm_out, stream=s),
                      lambda: fastinfer.mm_bf16_fp4(a, weights)))
        cases.append(("mm_bf16_fp4_pdl", "mm_bf16_fp4 M1 N128 K128, PDL",
                      lambda: fastinfer.mm_bf16_fp4(a, weights, out=mm_out, enable_pdl=True, stream=s),
                      lambda: fastinfer.mm_bf16_fp4(a, weights, enable_pdl=True)))
    return cases


COLD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
torch.cuda.init(); torch.empty(1, device="cuda")
t_ctx = time.perf_counter()
import fastinfer
t_import = time.perf_counter()
sys.path.insert(0, sys.argv[2])
import host_overhead as h
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    case = [c for c in h.make_cases(stream, sys.argv[1]) if c[0] == sys.argv[1]][0]
    torch.cuda.synchronize()
    t1 = time.perf_counter(); case[2](); t2 = time.perf_counter(); stream.synchronize(); t3 = time.perf_counter()
    case[2](); t4 = time.perf_counter(); stream.synchronize()
print("COLD_START " + json.dumps(dict(op=sys.argv[1], torch_and_context_ms=(t_ctx - t0) * 1e3,
      import_fastinfer_ms=(t_import - t_ctx) * 1e3, first_call_host_ms=(t2 - t1) * 1e3,
      first_call_done_ms=(t3 - t1) * 1e3, second_call_host_us=(t4 - t3) * 1e6)))
"""


def cold_start(key):
    here = os.path.dirname(os.path.abspath(__file__))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", COLD_CHILD, key, here], capture_output=True, text=True, timeout=120)
    wall = (time.perf_counter() - t0) * 1e3
    for line in r.stdout.splitlines():
        if line.startswith("COLD_START "):
            out = json.loads(line[len("COLD_START "):])
            out["process_ms"] = wall
            return out
    return {"op": key, "error": (r.stderr or r.stdout)[-500:]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--cpp", help="JSON of `fastinfer_bench host_overhead` (C++ host cost, raw launch)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-start children")
    parser.add_argument("--batches", type=int, default=BATCHES, help="timed batches per op (default %(default)s)")
    args = parser.parse_args()

    cpp_ops, raw_launch = {}, None
    if args.cpp and os.path.exists(args.cpp):
        with open(args.cpp) as f:
            cpp = json.load(f).get("host_overhead")
        if cpp and "ops" in cpp:  # absent when the C++ routine did not run or is the old one
            raw_launch = cpp["raw_launch_us"]
            cpp_ops = {o["op"]: o for o in cpp["ops"]}

    stream = torch.cuda.Stream()
    x = torch.zeros(16, device="cuda")
    with torch.cuda.stream(stream):
        torch_add_us = host_us(lambda: x.add_(1.0), stream, args.batches)
        rows = []
        print(f"{'op (tiny shapes, warm)':48s} {'py us':>8s} {'py alloc us':>11s} {'C++ us':>8s} {'py-C++':>8s} {'x raw':>6s} "
              f"{'py-C++ (' + str(SHORT_BATCH) + '/batch)':>16s} {'in-process C++ / py-C++ / py only us':>37s}")
        for key, name, prealloc, alloc in make_cases(stream):
            us = host_us(prealloc, stream, args.batches)
            us_alloc = host_us(alloc, stream, args.batches)
            us_short = host_us(prealloc, stream, args.batches, SHORT_BATCH)
            cpp_in, py_minus_cpp_in, py_only_in = in_process_split(prealloc, stream, args.batches)
            c = cpp_ops.get(key, {})
            cpp_us = c.get("host_us")
            cpp_short = c.get("host_us_short_batch")
            kernels = c.get("kernels", 1)
            ratio = us / (kernels * raw_launch) if raw_launch else None
            print(f"{name:48s} {us:8.2f} {us_alloc:11.2f} {cpp_us if cpp_us else float('nan'):8.2f} "
                  f"{(us - cpp_us) if cpp_us else float('nan'):8.2f} {ratio if ratio else float('nan'):6.2f} "
                  f"{(us_short - cpp_short) if cpp_short else float('nan'):16.2f} {cpp_in:13.2f} / {py_minus_cpp_in:11.2f} / {py_only_in:7.2f}")
            rows.append(dict(op=key, name=name, python_us=us, python_allocating_us=us_alloc, cpp_us=cpp_us,
                             kernels=kernels, ratio_to_raw_launches=ratio, python_us_short_batch=us_short,
                             cpp_us_short_batch=cpp_short, cpp_us_in_process=cpp_in,
                             python_minus_cpp_us_in_process=py_minus_cpp_in, python_only_us_in_process=py_only_in))
    print(f"torch x.add_(1) (one launch through torch): {torch_add_us:.2f} us"
          + (f"; raw cudaLaunchKernel from C++: {raw_launch:.2f} us" if raw_launch else ""))

    cold = []
    if not args.no_cold:
        print(f"\n{'cold start (fresh interpreter per op)':40s} {'proc ms':>8s} {'torch+ctx ms':>12s} {'import ms':>9s} "
              f"{'1st host ms':>11s} {'1st done ms':>11s} {'2nd us':>8s}")
        for key in [row["op"] for row in rows]:
            r = cold_start(key)
            cold.append(r)
            if "error" in r:
                print(f"{key:40s} error: {r['error']}")
            else:
                print(f"{key:40s} {r['process_ms']:8.1f} {r['torch_and_context_ms']:12.1f} {r['import_fastinfer_ms']:9.1f} "
                      f"{r['first_call_host_ms']:11.3f} {r['first_call_done_ms']:11.3f} {r['second_call_host_us']:8.1f}")

    result = dict(ops=rows, torch_add_us=torch_add_us, raw_launch_us=raw_launch, cold_start=cold,
                  batches=args.batches, calls_per_batch=PER_BATCH, short_batch=SHORT_BATCH)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
