"""The input dropout of Keras 3's LSTM and GRU in their implementation 1 (chosen whenever
`recurrent_dropout` is set): one input mask per gate. Gate g's input projection reads
x * mask[g], each mask (N, C) per sample and feature, drawn once per step, used at every time
step and scaled by 1 / (1 - rate) (Keras's DropoutRNNCell with dropout_mask_count = gates).
Keras's implementation 2 (dropout alone) shares one mask: sequence_dropout.py.

Only the fused recurrence (recurrent_fused.py) runs this case: these kernels replace its
input projection. Forward, per gate: the masked copy of the whole sequence (one parallel
pass), then one GEMM (N*T, C) . kernel_g (C, units) into the gate's columns of the
projection, plus the bias. Backward, per gate: dkernel_g = (x * mask[g])^T . dz_g and
dx += (dz_g . kernel_g^T) * mask[g], one GEMM each. The masks (G, N, C) are drawn by
recurrent_fused_kernels.draw_recurrent_dropout; `scratch` holds plan-time buffers (the masked
copy, a gate's kernel, projection and dx part) shared by the forward and the backward.
"""

import numpy as np

from .numba_config import PARALLEL, njit, prange


def gate_dropout_scratch(n, t, c, units):
    """The buffers the two kernels share: (masked x, gate kernel, gate rows, dx part, gate
    kernel gradient)."""
    return (np.zeros(n * t * c, np.float32), np.zeros(c * units, np.float32),
            np.zeros(n * t * units, np.float32), np.zeros(n * t * c, np.float32),
            np.zeros(c * units, np.float32))


@njit(**PARALLEL)
def _mask_input(x, masks, gate, masked_x, n, t, c):
    """masked_x[n, t, :] = x[n, t, :] * masks[gate, n, :]."""
    for row in prange(n * t):
        keeps = (gate * n + row // t) * c
        for k in range(c):
            masked_x[row * c + k] = x[row * c + k] * masks[keeps + k]


@njit(**PARALLEL)
def _gate_columns(matrix, gate, rows, units, width, block):
    """block (rows, units) = the gate's columns of matrix (rows, width)."""
    for r in prange(rows):
        for j in range(units):
            block[r * units + j] = matrix[r * width + gate * units + j]


@njit(**PARALLEL)
def gate_dropout_projection(x, kernel, bias, masks, proj, scratch, dims):
    """proj (N*T, G*units): gate g's columns = (x * masks[g]) . kernel_g + bias_g."""
    n, t, c, units, gates = dims
    masked_x, gate_kernel, gate_rows, _, _ = scratch
    rows, width = n * t, gates * units
    for g in range(gates):
        _mask_input(x, masks, g, masked_x, n, t, c)
        _gate_columns(kernel, g, c, units, width, gate_kernel)
        np.dot(masked_x.reshape((rows, c)), gate_kernel.reshape((c, units)),
               gate_rows.reshape((rows, units)))
        for r in prange(rows):
            for j in range(units):
                proj[r * width + g * units + j] = gate_rows[r * units + j] + bias[g * units + j]


@njit(**PARALLEL)
def gate_dropout_input_grads(x, kernel, masks, dz_in, dx, dkernel, scratch, dims, need_dx):
    """dkernel_g = (x * masks[g])^T . dz_g; dx = sum_g (dz_g . kernel_g^T) * masks[g]."""
    n, t, c, units, gates = dims
    masked_x, gate_kernel, gate_grad, dx_part, gate_dkernel = scratch
    rows, width = n * t, gates * units
    if need_dx:
        dx[:] = 0.0
    for g in range(gates):
        _mask_input(x, masks, g, masked_x, n, t, c)
        _gate_columns(dz_in, g, rows, units, width, gate_grad)
        np.dot(masked_x.reshape((rows, c)).T, gate_grad.reshape((rows, units)),
               gate_dkernel.reshape((c, units)))
        for k in prange(c):
            for j in range(units):
                dkernel[k * width + g * units + j] = gate_dkernel[k * units + j]
        if need_dx:
            _gate_columns(kernel, g, c, units, width, gate_kernel)
            np.dot(gate_grad.reshape((rows, units)), gate_kernel.reshape((c, units)).T,
                   dx_part.reshape((rows, c)))
            for row in prange(rows):
                keeps = (g * n + row // t) * c
                for k in range(c):
                    dx[row * c + k] += dx_part[row * c + k] * masks[keeps + k]
