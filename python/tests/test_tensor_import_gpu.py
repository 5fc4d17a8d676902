"""The fast argument path (DLPack's C exchange API) sees torch tensors exactly as the nanobind
DLPack import does, and the stream an op runs on by default is torch's current stream."""
import pytest

import fastinfer
from fastinfer import _C

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _tensors(torch):
    base = torch.randn(6, 8, 128, device="cuda")
    yield "bf16", torch.randn(3, 4, 128, device="cuda", dtype=torch.bfloat16)
    yield "fp16", torch.randn(5, 128, device="cuda", dtype=torch.float16)
    yield "uint8", torch.randint(0, 255, (16, 64), device="cuda", dtype=torch.uint8)
    yield "int32", torch.arange(7, device="cuda", dtype=torch.int32)
    yield "int64", torch.arange(9, device="cuda")
    yield "sliced view (storage offset)", base[2:5, 1]
    yield "transposed view", base[1].t()
    yield "empty", torch.empty(0, 128, device="cuda")
    yield "scalar", torch.tensor(3.0, device="cuda")
    # requires_grad=False: torch's __dlpack__ (the fallback path) refuses tensors that need grad.
    yield "parameter (Tensor subclass)", torch.nn.Parameter(torch.randn(4, 128, device="cuda"), requires_grad=False)
    yield "cpu float32", torch.randn(4, 3)


def _expected(torch, t):
    names = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32", torch.uint8: "uint8",
             torch.int32: "int32", torch.int64: "int64"}
    device = f"cuda:{t.device.index}" if t.is_cuda else "cpu"
    return dict(data_ptr=t.data_ptr(), dtype=names[t.dtype], shape=list(t.shape), strides=list(t.stride()),
                device=device)


def _comparable(info):
    # Strides of size-1 dimensions and the address of an empty tensor carry no information
    # (DLPack producers may normalise them).
    out = dict(info)
    out["strides"] = [s if n > 1 else None for s, n in zip(info["strides"], info["shape"])]
    if 0 in info["shape"]:
        out["data_ptr"] = None
    return out


@pytest.mark.parametrize("fast", [True, False])
def test_both_import_paths_see_what_torch_sees(torch, fast):
    _C._set_fast_import(fast)
    try:
        for name, t in _tensors(torch):
            info = _C.tensor_info(t)
            assert _comparable(info) == _comparable(_expected(torch, t)), name
    finally:
        _C._set_fast_import(True)


def test_torch_publishes_the_exchange_api_or_falls_back(torch):
    # Either path is correct; this records which one torch takes (the host cost depends on it).
    available = _C._fast_import_available(torch.empty(1, device="cuda"))
    print(f"torch {torch.__version__}: DLPack C exchange API {'used' if available else 'absent (nanobind path)'}")
    assert isinstance(available, bool)


def test_default_stream_is_torchs_current_stream(torch):
    t = torch.empty(4, device="cuda")
    assert _C._resolve_stream(None, t) == torch.cuda.current_stream().cuda_stream
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert _C._resolve_stream(None, t) == s.cuda_stream
    assert _C._resolve_stream(s, t) == s.cuda_stream
    assert _C._resolve_stream(s.cuda_stream, t) == s.cuda_stream
    assert _C._resolve_stream(None, torch.empty(4)) == 0  # CPU tensors have no stream
    if torch.cuda.device_count() > 1:
        t1 = torch.empty(4, device="cuda:1")
        s1 = torch.cuda.Stream(device=1)
        with torch.cuda.stream(s1):
            assert _C._resolve_stream(None, t1) == s1.cuda_stream
            assert _C._resolve_stream(None, t) == torch.cuda.current_stream(0).cuda_stream


def test_ops_run_on_the_current_stream(torch):
    # mm_bf16_fp4 without stream= inside torch.cuda.stream(s): the result is ready after s syncs.
    packed = torch.randint(0, 256, (128, 64), dtype=torch.uint8, device="cuda")
    scales = torch.full((128, 8), 0x38, dtype=torch.uint8, device="cuda")
    w = fastinfer.prepare_bf16_fp4_weights(packed, scales, alpha=1.0, swizzled=False)
    a = torch.randn(4, 128, device="cuda", dtype=torch.bfloat16)
    ref = fastinfer.mm_bf16_fp4(a, w)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    out = torch.full((4, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        fastinfer.mm_bf16_fp4(a, w, out=out)
        s.synchronize()
        assert torch.equal(out, ref)


def test_not_an_array_is_a_type_error_naming_the_argument(torch):
    packed = torch.zeros(128, 64, dtype=torch.uint8, device="cuda")
    scales = torch.zeros(128, 8, dtype=torch.uint8, device="cuda")
    with pytest.raises(TypeError, match=r"fastinfer: out must be an array"):
        fastinfer.nvfp4_dequantize(packed, scales, 1.0, swizzled=False, out=[1, 2])
