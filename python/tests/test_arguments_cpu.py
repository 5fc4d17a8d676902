"""How the extension reads array and stream arguments, without a GPU or torch: the DLPack C
exchange API fast path (driven here by a table built with ctypes, laid out as dlpack.h 1.3 says),
the fallback for types without it, and the errors for things that are not arrays or streams."""
import ctypes

import numpy as np
import pytest

import fastinfer
from fastinfer import _C

c_int64_p = ctypes.POINTER(ctypes.c_int64)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", c_int64_p), ("strides", c_int64_p), ("byte_offset", ctypes.c_uint64)]


class ApiHeader(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p)]


DLTENSOR_FROM_PY_OBJECT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DLTensor))
CURRENT_WORK_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class ExchangeApi(ctypes.Structure):
    _fields_ = [("header", ApiHeader), ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", DLTENSOR_FROM_PY_OBJECT),
                ("current_work_stream", CURRENT_WORK_STREAM)]


FAKE_STREAM = 0x5EED
calls = {"import": 0, "stream": []}


@DLTENSOR_FROM_PY_OBJECT
def _fill(py_object, out):
    obj = ctypes.cast(py_object, ctypes.py_object).value
    calls["import"] += 1
    a = obj.array
    obj._shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    obj._strides = (ctypes.c_int64 * max(a.ndim, 1))(*(s // a.itemsize for s in a.strides))
    t = out.contents
    t.data = a.ctypes.data
    t.device = DLDevice(obj.device_type, 0)
    t.ndim = a.ndim
    t.dtype = DLDataType(2, 32, 1)  # float32
    t.shape = ctypes.cast(obj._shape, c_int64_p)
    t.strides = ctypes.cast(obj._strides, c_int64_p)
    t.byte_offset = 0
    return 0


@CURRENT_WORK_STREAM
def _current_stream(device_type, device_id, out):
    calls["stream"].append((device_type, device_id))
    out[0] = FAKE_STREAM
    return 0


_api = ExchangeApi(ApiHeader(1, 3, None), None, None, None, _fill, _current_stream)
_capsule_name = b"dlpack_exchange_api"
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


class FastArray:
    """A float32 array type that publishes the exchange API (and nothing else: no __dlpack__)."""
    __dlpack_c_exchange_api__ = _PyCapsule_New(ctypes.addressof(_api), _capsule_name, None)

    def __init__(self, array, device_type=1):
        self.array = np.ascontiguousarray(array, dtype=np.float32)
        self.device_type = device_type


class BrokenApiArray:
    """Publishes something that is not an exchange API table: the extension must fall back."""
    __dlpack_c_exchange_api__ = "not a capsule"

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_exchange_api_table_is_read_and_used():
    x = FastArray(np.arange(12).reshape(3, 4))
    assert _C._fast_import_available(x)
    before = calls["import"]
    info = fastinfer.tensor_info(x)
    assert calls["import"] == before + 1
    assert info == dict(data_ptr=x.array.ctypes.data, dtype="float32", shape=[3, 4], strides=[4, 1], device="cpu")


def test_exchange_api_path_runs_an_op():
    # nvfp4_dequantize on the CPU with the output array passed through the fast path.
    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 32)).astype(np.float32)
    packed, scales = fastinfer.nvfp4_quantize(w, 448 * 6 / np.abs(w).max(), swizzled=False)
    ref = fastinfer.nvfp4_dequantize(packed, scales, 448 * 6 / np.abs(w).max(), swizzled=False)
    out = FastArray(np.full((16, 32), np.nan))
    fastinfer.nvfp4_dequantize(packed, scales, 448 * 6 / np.abs(w).max(), swizzled=False, out=out)
    np.testing.assert_array_equal(out.array, ref)


def test_default_stream_comes_from_the_exchange_api_for_cuda_arrays():
    cuda_like = FastArray(np.zeros(4), device_type=2)  # claims kDLCUDA; no memory is touched
    calls["stream"].clear()
    assert _C._resolve_stream(None, cuda_like) == FAKE_STREAM
    assert calls["stream"] == [(2, 0)]
    assert _C._resolve_stream(None, FastArray(np.zeros(4))) == 0  # CPU: no stream asked for
    assert calls["stream"] == [(2, 0)]


def test_fast_import_switch_falls_back_to_the_dlpack_protocol():
    _C._set_fast_import(False)
    try:
        with pytest.raises(TypeError, match="fastinfer: array must be an array"):
            fastinfer.tensor_info(FastArray(np.zeros(4)))  # no __dlpack__: only the fast path reads it
    finally:
        _C._set_fast_import(True)


def test_a_broken_exchange_api_attribute_falls_back():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = BrokenApiArray(a)
    assert not _C._fast_import_available(x)
    assert fastinfer.tensor_info(x)["shape"] == [2, 3]


def test_numpy_takes_the_fallback_path():
    a = np.zeros((2, 3), dtype=np.float16)
    assert fastinfer.tensor_info(a)["strides"] == [3, 1]


def test_not_an_array_is_a_type_error_naming_the_argument():
    q = np.ones((4, 1, 128), dtype=np.float16)
    with pytest.raises(TypeError, match=r"fastinfer: cu_seqlens must be an array .* got list"):
        fastinfer.chunk_gated_delta_rule(q, q, q, cu_seqlens=[0, 4])


def test_stream_argument_forms():
    a = np.zeros(4, dtype=np.float32)

    class HasCudaStream:
        cuda_stream = 1234

    assert _C._resolve_stream(None, a) == 0
    assert _C._resolve_stream(77, a) == 77
    assert _C._resolve_stream(HasCudaStream(), a) == 1234
    with pytest.raises(TypeError, match="fastinfer: stream must be"):
        _C._resolve_stream("default", a)


def test_prefill_and_decode_take_flashinfers_arguments_by_position_and_keyword():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((8, 1, 128)).astype(np.float16)
    cu = np.array([0, 3, 8], dtype=np.int32)
    out, state = fastinfer.chunk_gated_delta_rule(q, q, q, None, None, None, None, True, cu)
    assert out.shape == (8, 1, 128) and out.dtype == np.float16
    assert state.shape == (2, 1, 128, 128) and state.dtype == np.float32
    given = np.full_like(out, np.nan)
    assert fastinfer.chunk_gated_delta_rule(q, q, q, cu_seqlens=cu, output=given) is given
    np.testing.assert_array_equal(given, out)

    qd = rng.standard_normal((2, 1, 1, 128)).astype(np.float16)
    pool = np.zeros((3, 1, 128, 128), dtype=np.float32)
    gates = [np.zeros(1, np.float32), np.zeros((2, 1, 1), np.float32), np.zeros(1, np.float32),
             np.zeros((2, 1, 1), np.float32)]
    a = fastinfer.gated_delta_rule_decode(qd, qd, qd, pool.copy(), *gates)  # default slots arange(B)
    b = fastinfer.gated_delta_rule_mtp(q=qd, k=qd, v=qd, state=pool.copy(), A_log=gates[0], a=gates[1],
                                       dt_bias=gates[2], b=gates[3], initial_state_indices=np.arange(2, dtype=np.int32))
    assert a.shape == (2, 1, 1, 128)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError):
        fastinfer.gated_delta_rule_decode(qd, qd, qd, pool, *gates, no_such_argument=1)
