"""Small float64 numpy references for the Python tests (the C++ suites hold the full oracles)."""
import numpy as np

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float64)


def gdn_serial(q, k, v, cu, alpha=None, beta=None, scale=None, state0=None):
    """Token-serial gated delta rule; q [T,Hq,D], k [T,Hk,D], v [T,Hv,D]; returns (o, final states)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    t_total, hq, d = q.shape
    hk, hv = k.shape[1], v.shape[1]
    h = max(hq, hv)
    scale = 1 / np.sqrt(d) if scale is None else scale
    out = np.zeros((t_total, h, d))
    finals = np.zeros((len(cu) - 1, h, d, d))
    for n in range(len(cu) - 1):
        for head in range(h):
            s = np.zeros((d, d)) if state0 is None else np.array(state0[n, head], dtype=np.float64)
            for t in range(cu[n], cu[n + 1]):
                a = 1.0 if alpha is None else float(alpha[t, head])
                b = 1.0 if beta is None else float(beta[t, head])
                kk, vv, qq = k[t, head * hk // h], v[t, head * hv // h], q[t, head * hq // h]
                s = a * (s - b * np.outer(s @ kk, kk)) + b * np.outer(vv, kk)
                out[t, head] = scale * (s @ qq)
            finals[n, head] = s
    return out, finals


def e4m3_to_float(byte):
    sign = -1.0 if byte & 0x80 else 1.0
    exp, mant = (byte >> 3) & 0xF, byte & 0x7
    if exp == 0:
        return sign * mant / 8 * 2.0 ** -6
    return sign * (1 + mant / 8) * 2.0 ** (exp - 7)


def nvfp4_dequant_linear(packed, scales, global_scale):
    """dequant[n, k] = e2m1(q) * float(sf[n, k/16]) / g, packed low nibble = even k."""
    n, half = packed.shape
    nibbles = np.empty((n, 2 * half), dtype=np.uint8)
    nibbles[:, 0::2] = packed & 0xF
    nibbles[:, 1::2] = packed >> 4
    values = E2M1[nibbles & 7] * np.where(nibbles & 8, -1.0, 1.0)
    sf = np.vectorize(e4m3_to_float)(scales.reshape(n, -1)).repeat(16, axis=1)
    return values * sf / global_scale
