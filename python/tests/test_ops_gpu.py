"""The ops on the GPU through the Python package, against torch float64 references."""
import numpy as np
import pytest

import fastinfer
from reference import gdn_serial

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_chunk_gated_delta_rule_gpu(torch):
    cu = torch.tensor([0, 65, 65, 200], dtype=torch.int32, device="cuda")
    t, hq, hv, d = 200, 2, 4, 128
    q = torch.randn(t, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.nn.functional.normalize(torch.randn(t, hq, d, device="cuda"), dim=-1).to(torch.bfloat16)
    v = torch.randn(t, hv, d, device="cuda", dtype=torch.bfloat16)
    alpha = torch.rand(t, hv, device="cuda") * 0.1 + 0.9
    beta = torch.rand(t, hv, device="cuda")
    out, state = fastinfer.chunk_gated_delta_rule(q, k, v, g=alpha, beta=beta, cu_seqlens=cu,
                                                  output_final_state=True)
    ref, ref_state = gdn_serial(q.float().cpu().numpy(), k.float().cpu().numpy(), v.float().cpu().numpy(),
                                cu.cpu().numpy(), alpha.cpu().numpy(), beta.cpu().numpy())
    o = out.float().cpu().numpy()
    assert np.linalg.norm(o - ref) / np.linalg.norm(ref) < 1e-2
    s = state.cpu().numpy()
    assert np.abs(s[[0, 2]] - ref_state[[0, 2]]).max() < 2e-2


def test_chunk_gated_delta_rule_context_parallel_matches_plain_path(torch):
    lengths = [3000, 0, 700]
    cu = torch.tensor([0, 3000, 3000, 3700], dtype=torch.int32, device="cuda")
    t, hq, hv, d = 3700, 2, 4, 128
    q = torch.randn(t, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.nn.functional.normalize(torch.randn(t, hq, d, device="cuda"), dim=-1).to(torch.bfloat16)
    v = torch.randn(t, hv, d, device="cuda", dtype=torch.bfloat16)
    alpha = torch.rand(t, hv, device="cuda") * 0.1 + 0.9
    beta = torch.rand(t, hv, device="cuda")
    runs = [fastinfer.chunk_gated_delta_rule(q, k, v, g=alpha, beta=beta, cu_seqlens=cu, output_final_state=True,
                                             use_cp=cp, max_seqlen=max(lengths)) for cp in (True, False)]
    (out_cp, state_cp), (out, state) = runs
    assert (out_cp.float() - out.float()).norm() / out.float().norm() < 5e-3
    assert (state_cp[[0, 2]] - state[[0, 2]]).abs().max() < 5e-3


def test_mm_bf16_fp4_gpu_matches_dequantized_matmul(torch):
    m, n, k = 37, 512, 1024
    w = torch.randn(n, k, device="cuda", dtype=torch.float32)
    g = fastinfer.nvfp4_global_scale_for(float(w.abs().max()))
    packed, scales = fastinfer.nvfp4_quantize(w, g, swizzled=True)
    deq = fastinfer.nvfp4_dequantize(packed, scales, g, swizzled=True)
    weights = fastinfer.prepare_bf16_fp4_weights(packed, scales, alpha=1.0 / g, swizzled=True)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    out = fastinfer.mm_bf16_fp4(a, weights)
    ref = a.double() @ (deq.double() * g).T / g
    err = (out.double() - ref).norm() / ref.norm()
    assert out.shape == (m, n) and out.dtype == torch.bfloat16
    assert err < 1e-2


def test_gated_delta_rule_decode_gpu_matches_cpu_path(torch):
    b_size, t, h, hv, d = 8, 1, 4, 8, 128
    args = dict(q=torch.randn(b_size, t, h, d, dtype=torch.bfloat16), k=torch.randn(b_size, t, h, d, dtype=torch.bfloat16),
                v=torch.randn(b_size, t, hv, d, dtype=torch.bfloat16), A_log=torch.rand(hv) - 1,
                a=torch.randn(b_size, t, hv), dt_bias=torch.rand(hv), b=torch.randn(b_size, t, hv))
    state_cpu = torch.randn(b_size, hv, d, d) * 0.1
    state_gpu = state_cpu.cuda()
    out_cpu = fastinfer.gated_delta_rule_decode(state=state_cpu, **args)
    out_gpu = fastinfer.gated_delta_rule_decode(state=state_gpu, **{k_: x.cuda() for k_, x in args.items()})
    torch.testing.assert_close(out_gpu.cpu().float(), out_cpu.float(), atol=0.016, rtol=5e-3)
    torch.testing.assert_close(state_gpu.cpu(), state_cpu, atol=1e-3, rtol=1e-3)
