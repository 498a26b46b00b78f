"""The activations of the fused recurrent kernel (recurrent_fused_kernels.py), by an integer
code so that one compiled kernel serves every choice: Keras 3's definitions (JAX backend) and
their derivatives, both from the pre-activation z (the kernel keeps z for backward).

oneDNN's RNN cells fix these (tanh and sigmoid; tanh, relu, sigmoid or linear for the vanilla
cell); any other choice of a layer runs on the fused kernel.
"""

import numpy as np

from .numba_config import SERIAL, njit

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

# Keras's names (as activations.get takes them) -> the kernel's code
ACTIVATION_CODES = {"tanh": 0, "sigmoid": 1, "relu": 2, "linear": 3, "hard_sigmoid": 4,
                    "elu": 5, "softplus": 6, "softsign": 7, "selu": 8, "exponential": 9,
                    "silu": 10, "swish": 10, "relu6": 11}


@njit(inline="always", **SERIAL)
def _sigmoid(z):
    if z >= 0:
        return np.float32(1.0) / (np.float32(1.0) + np.exp(-z))
    e = np.exp(z)
    return e / (np.float32(1.0) + e)


@njit(**SERIAL)
def activate(code, z):
    """Keras's activation number `code` of z."""
    one, zero = np.float32(1.0), np.float32(0.0)
    if code == 0:
        return np.tanh(z)
    if code == 1:
        return _sigmoid(z)
    if code == 2:
        return max(z, zero)
    if code == 3:
        return z
    if code == 4:  # relu6(z + 3) / 6
        return min(max(z + np.float32(3.0), zero), np.float32(6.0)) / np.float32(6.0)
    if code == 5:
        return z if z > 0 else np.expm1(z)
    if code == 6:  # log(1 + exp(z)) without overflow
        return max(z, zero) + np.log1p(np.exp(-abs(z)))
    if code == 7:
        return z / (one + abs(z))
    if code == 8:
        return np.float32(SELU_SCALE) * (z if z > 0 else np.float32(SELU_ALPHA) * np.expm1(z))
    if code == 9:
        return np.exp(z)
    if code == 10:
        return z * _sigmoid(z)
    return min(max(z, zero), np.float32(6.0))  # 11: relu6


@njit(**SERIAL)
def derivative(code, z):
    """d activate(code, z) / dz (0 at the kinks, as JAX's)."""
    one, zero = np.float32(1.0), np.float32(0.0)
    if code == 0:
        t = np.tanh(z)
        return one - t * t
    if code == 1:
        s = _sigmoid(z)
        return s * (one - s)
    if code == 2:
        return one if z > 0 else zero
    if code == 3:
        return one
    if code == 4:
        return one / np.float32(6.0) if -3.0 < z < 3.0 else zero
    if code == 5:
        return one if z > 0 else np.exp(z)
    if code == 6:
        return _sigmoid(z)
    if code == 7:
        d = one + abs(z)
        return one / (d * d)
    if code == 8:
        return np.float32(SELU_SCALE) * (one if z > 0 else np.float32(SELU_ALPHA) * np.exp(z))
    if code == 9:
        return np.exp(z)
    if code == 10:
        s = _sigmoid(z)
        return s + z * s * (one - s)
    return one if 0.0 < z < 6.0 else zero  # 11: relu6
