import numpy as np
import pytest

import fastinfer


def test_version_and_devices():
    assert fastinfer.__version__ == "0.1.0"
    n = fastinfer.cuda_device_count()
    assert n >= 0
    devs = fastinfer.devices()
    assert len(devs) == n
    for d in devs:
        assert d["sm_count"] > 0 and d["l2_cache_bytes"] > 0


@pytest.mark.parametrize("dtype,name", [(np.float32, "float32"), (np.float16, "float16"),
                                        (np.int32, "int32"), (np.int64, "int64"), (np.uint8, "uint8")])
def test_numpy_zero_copy_round_trip(dtype, name):
    a = np.arange(24, dtype=dtype).reshape(2, 3, 4)
    info = fastinfer.tensor_info(a)
    assert info["data_ptr"] == a.__array_interface__["data"][0]
    assert info["dtype"] == name
    assert info["shape"] == [2, 3, 4]
    assert info["strides"] == [12, 4, 1]
    assert info["device"] == "cpu"


def test_strided_view_keeps_strides():
    a = np.zeros((8, 6), dtype=np.float32)[::2, 1:]
    info = fastinfer.tensor_info(a)
    assert info["shape"] == [4, 5]
    assert info["strides"] == [12, 1]
    assert info["data_ptr"] == a.__array_interface__["data"][0]


def test_unsupported_dtype_is_type_error():
    with pytest.raises(TypeError, match="from_dlpack: dtype must be"):
        fastinfer.tensor_info(np.zeros(4, dtype=np.complex64))


@pytest.mark.gpu
def test_torch_cuda_zero_copy():
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 16, 128, device="cuda", dtype=torch.bfloat16)
    info = fastinfer.tensor_info(t)
    assert info["data_ptr"] == t.data_ptr()
    assert info["dtype"] == "bfloat16"
    assert info["device"] == "cuda:0"
    assert info["strides"] == list(t.stride())


def test_distributed_prefill_rejects_a_null_communicator():
    assert isinstance(fastinfer.built_with_nccl(), bool)
    q = np.ones((4, 1, 128), dtype=np.float16)
    with pytest.raises((ValueError, RuntimeError), match=r"nccl|NCCL"):
        fastinfer.chunk_gated_delta_rule_distributed(q, q, q, 0, cu_seqlens=np.array([0, 4], dtype=np.int32))
