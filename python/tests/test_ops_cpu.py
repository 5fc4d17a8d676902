"""The ops on the CPU reference path, through the Python package (numpy arrays, zero copy)."""
import numpy as np
import pytest

import fastinfer
from reference import gdn_serial, nvfp4_dequant_linear

rng = np.random.default_rng()


def _unit(x):
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(x.dtype)


def test_chunk_gated_delta_rule_cpu_matches_serial_reference():
    cu = np.array([0, 30, 30, 101], dtype=np.int32)  # includes a zero-length sequence
    t, hq, hv, d = int(cu[-1]), 2, 4, 128
    q = rng.standard_normal((t, hq, d)).astype(np.float16)
    k = _unit(rng.standard_normal((t, hq, d))).astype(np.float16)
    v = rng.standard_normal((t, hv, d)).astype(np.float16)
    alpha = rng.uniform(0.9, 1.0, (t, hv)).astype(np.float32)
    beta = rng.uniform(0.1, 1.0, (t, hv)).astype(np.float32)
    out, state = fastinfer.chunk_gated_delta_rule(q, k, v, g=alpha, beta=beta, cu_seqlens=cu,
                                                  output_final_state=True)
    ref_out, ref_state = gdn_serial(q, k, v, cu, alpha, beta)
    assert out.shape == (t, hv, d) and out.dtype == np.float16
    assert state.shape == (3, hv, d, d) and state.dtype == np.float32
    assert np.linalg.norm(out - ref_out) / np.linalg.norm(ref_out) < 2e-3
    nonempty = [0, 2]
    assert np.abs(state[nonempty] - ref_state[nonempty]).max() < 1e-4


def test_chunk_gated_delta_rule_errors_are_typed_and_named():
    cu = np.array([0, 4], dtype=np.int32)
    q = np.zeros((4, 1, 128), dtype=np.float32)
    with pytest.raises(TypeError, match=r"gdn::prefill: q must be bfloat16 or float16, got float32"):
        fastinfer.chunk_gated_delta_rule(q, q, q, cu_seqlens=cu)
    q16 = np.ones((4, 1, 64), dtype=np.float16)
    with pytest.raises(ValueError, match=r"gdn::prefill: q.shape\[2\]"):
        fastinfer.chunk_gated_delta_rule(q16, q16, q16, cu_seqlens=cu)


def test_chunk_gated_delta_rule_use_cp_on_cpu_is_a_named_error():
    cu = np.array([0, 4], dtype=np.int32)
    q = np.ones((4, 1, 128), dtype=np.float16)
    with pytest.raises(ValueError, match=r"gdn::prefill: use_cp must be Auto or Off for CPU tensors"):
        fastinfer.chunk_gated_delta_rule(q, q, q, cu_seqlens=cu, use_cp=True)
    out = fastinfer.chunk_gated_delta_rule(q, q, q, cu_seqlens=cu, use_cp=False, max_seqlen=4)
    assert out.shape == (4, 1, 128)


def test_nvfp4_quantize_dequantize_cpu_round_trip():
    w = rng.standard_normal((48, 64)).astype(np.float32)
    w[3, :16] = 0.0  # an all-zero block
    g = fastinfer.nvfp4_global_scale_for(float(np.abs(w).max()))
    packed, scales = fastinfer.nvfp4_quantize(w, g, swizzled=False)
    assert packed.shape == (48, 32) and packed.dtype == np.uint8
    assert scales.shape == (48 * 4,)
    deq = fastinfer.nvfp4_dequantize(packed, scales, g, swizzled=False)
    np.testing.assert_array_equal(deq, nvfp4_dequant_linear(packed, scales, g).astype(np.float32))
    assert np.all(deq[3, :16] == 0)
    assert np.linalg.norm(deq - w) / np.linalg.norm(w) < 0.15  # 4-bit values: coarse, but close


def test_mm_bf16_fp4_rejects_non_bf16_activations():
    w = rng.standard_normal((16, 32)).astype(np.float32)
    packed, scales = fastinfer.nvfp4_quantize(w, 100.0, swizzled=False)
    weights = fastinfer.prepare_bf16_fp4_weights(packed, scales, alpha=0.01, swizzled=False)
    assert (weights.n, weights.k) == (16, 32)
    a = np.zeros((2, 32), dtype=np.float16)
    with pytest.raises(TypeError, match="mm_bf16_fp4: a must be bfloat16"):
        fastinfer.mm_bf16_fp4(a, weights, out=np.zeros((2, 16), dtype=np.float16))


def _softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def test_gated_delta_rule_decode_cpu_matches_reference_and_updates_pool():
    b_size, t, h, hv, d, pool = 3, 2, 2, 4, 128, 5
    q = rng.standard_normal((b_size, t, h, d)).astype(np.float16)
    k = rng.standard_normal((b_size, t, h, d)).astype(np.float16)
    v = rng.standard_normal((b_size, t, hv, d)).astype(np.float16)
    A_log = rng.uniform(-1, 0.5, hv).astype(np.float32)
    a = rng.standard_normal((b_size, t, hv)).astype(np.float32)
    dt_bias = rng.uniform(-1, 1, hv).astype(np.float32)
    b = rng.standard_normal((b_size, t, hv)).astype(np.float32)
    state = (0.1 * rng.standard_normal((pool, hv, d, d))).astype(np.float32)
    slots = np.array([4, -1, 1], dtype=np.int32)  # sequence 1 is padding
    before = state.copy()
    out = fastinfer.gated_delta_rule_decode(q, k, v, state, A_log, a, dt_bias, b, initial_state_indices=slots,
                                            use_qk_l2norm=True)
    assert out.shape == (b_size, t, hv, d)
    assert np.all(out[1] == 0)
    np.testing.assert_array_equal(state[[0, 2, 3]], before[[0, 2, 3]])  # untouched slots
    for i in (0, 2):
        for head in range(hv):
            s = before[slots[i], head].astype(np.float64)
            for step in range(t):
                qq = q[i, step, head // 2].astype(np.float64)
                kk = k[i, step, head // 2].astype(np.float64)
                qq, kk = qq / np.sqrt((qq * qq).sum() + 1e-6), kk / np.sqrt((kk * kk).sum() + 1e-6)
                alpha = np.exp(-np.exp(A_log[head]) * _softplus(a[i, step, head] + dt_bias[head]))
                beta = 1 / (1 + np.exp(-b[i, step, head]))
                s = alpha * (s - beta * np.outer(s @ kk, kk)) + beta * np.outer(v[i, step, head], kk)
                np.testing.assert_allclose(out[i, step, head], (s @ qq) / np.sqrt(d), atol=2e-3, rtol=5e-3)
            np.testing.assert_allclose(state[slots[i], head], s, atol=1e-5, rtol=1e-5)


def test_launch_repeat_probe_runs_the_cpp_call_n_times():
    """_C._set_launch_repeat(n) (the in-process C++ host-cost probe of python/bench/host_overhead.py)
    makes one Python call run the op n times: a decode into a pool in place then equals n calls,
    and with n = 0 the call converts its arguments but leaves the pool untouched."""
    from fastinfer import _C
    b_size, h, hv, d = 2, 1, 2, 128
    q, k = (rng.standard_normal((b_size, 1, h, d)).astype(np.float16) for _ in range(2))
    v = rng.standard_normal((b_size, 1, hv, d)).astype(np.float16)
    A_log = rng.uniform(-1, 0.5, hv).astype(np.float32)
    a, b = (rng.standard_normal((b_size, 1, hv)).astype(np.float32) for _ in range(2))
    dt_bias = rng.uniform(-1, 1, hv).astype(np.float32)
    slots = np.array([1, 0], dtype=np.int32)
    state = (0.1 * rng.standard_normal((2, hv, d, d))).astype(np.float32)
    repeated, looped = state.copy(), state.copy()

    def decode(pool):
        return fastinfer.gated_delta_rule_decode(q, k, v, pool, A_log, a, dt_bias, b, initial_state_indices=slots)

    _C._set_launch_repeat(3)
    try:
        decode(repeated)
    finally:
        _C._set_launch_repeat(1)
    for _ in range(3):
        decode(looped)
    assert not np.array_equal(looped, state)
    np.testing.assert_array_equal(repeated, looped)
    _C._set_launch_repeat(0)
    try:
        decode(repeated)
    finally:
        _C._set_launch_repeat(1)
    np.testing.assert_array_equal(repeated, looped)
    with pytest.raises(ValueError, match="at least 0"):
        _C._set_launch_repeat(-1)
