"""The README's Python example: GDN prefill and an NVFP4 GEMM on torch tensors (zero copy)."""
import torch
import fastinfer

T, H, D = 4096, 32, 128
cu_seqlens = torch.tensor([0, 1000, T], dtype=torch.int32, device="cuda")  # two sequences
q, k, v = (torch.randn(T, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
g, beta = torch.rand(T, H, device="cuda") * 0.1 + 0.9, torch.rand(T, H, device="cuda")
o, state = fastinfer.chunk_gated_delta_rule(q, k, v, g=g, beta=beta, cu_seqlens=cu_seqlens,
                                            use_qk_l2norm_in_kernel=True, output_final_state=True)
w = torch.randn(2048, H * D, device="cuda")                  # a weight [N, K], quantized once
gs = fastinfer.nvfp4_global_scale_for(w.abs().max().item())
weights = fastinfer.prepare_bf16_fp4_weights(*fastinfer.nvfp4_quantize(w, gs), alpha=1 / gs)
y = fastinfer.mm_bf16_fp4(o.reshape(T, H * D), weights)      # [T, 2048] bfloat16
print("quickstart:", tuple(o.shape), tuple(state.shape), tuple(y.shape))
