"""The fused recurrent kernel: what oneDNN's RNN primitives cannot express (Keras masks,
recurrent dropout, activations their cells lack), as one compiled numba call forward and one
backward over the whole sequence, never a Python loop over time steps.

Forward: the input projection of every step at once, x (N*T, C) . kernel (C, G*units) + bias,
is one GEMM (np.dot calls BLAS); then each sample runs its recurrence over time inside the
compiled code, in parallel over the batch (samples are independent): per step h . U as a hand
loop over the rows of U (contiguous, so it vectorizes), the gate math, the mask select (a
masked step keeps the previous states; its output is the previous h, or zero with
zero_output_for_mask, as Keras 3's backend rnn), and the recurrent dropout mask on h.

Keras 3 applies recurrent dropout with a mask per gate (LSTM and GRU switch to their
implementation 1): the recurrent matmul of gate g reads h * drop[g], so `drop` is (N, G*units)
(all ones when inactive) and the recurrent product is taken per gate.

Backward (BPTT) walks each sample back over time from the saved pre-activations and states,
writing the gradients of the input projection (dz_in) and of the recurrent products (dz_rec)
per step; then one GEMM each gives dx and dkernel, and one parallel pass drecurrent and dbias.

Arrays are flat float32. Rows of x, the projections, pre-activations and their gradients are
(n, input step); the states hs / cs (N, T + 1, units) are in processing order (row 0 the
initial state). `options` = (cell, activation, recurrent_activation, go_backwards,
reverses_output, return_sequences, zero_output_for_mask, masked, projected); `projected`: the
input projection (and dx, dkernel) are computed outside, with one input dropout mask per
gate (recurrent_gate_dropout.py).
"""

import numpy as np

from .dropout import CHUNK, fill_keeps, step_salt
from .numba_config import PARALLEL, SERIAL, get_thread_id, njit, prange
from .recurrent_activations import activate, derivative

VANILLA, LSTM, GRU, LBR_GRU = 0, 1, 2, 3  # the cells, by code


@njit(inline="always", **SERIAL)
def _recurrent_product(rec_in, recurrent, acc, first_gate, last_gate, units, width):
    """acc[g*units + j] = sum_k rec_in[g*units + k] * U[k, g*units + j] for the gates given."""
    for g in range(first_gate, last_gate):
        base = g * units
        for j in range(units):
            acc[base + j] = 0.0
        for k in range(units):
            a = rec_in[base + k]
            if a != 0.0:
                row = k * width + base
                for j in range(units):
                    acc[base + j] += a * recurrent[row + j]


@njit(**PARALLEL)
def recurrent_forward(x, kernel, bias, recurrent, h0, c0, mask, drop, y, h_last, c_last,
                      proj, pre, rec_in, hs, cs, rh, acc, dims, options):
    """dims = (N, T, C, units, gates); bias (2 * G * units): the input bias, then the
    recurrent one (only a reset_after GRU's is not zero)."""
    n, t, c, units, gates = dims
    cell, act, ract, backwards, reverses, sequences, zero_output, masked, projected = options
    width = gates * units
    p2 = proj.reshape((n * t, width))
    if not projected:  # else a gate-masked projection is in proj (recurrent_gate_dropout.py)
        np.dot(x.reshape((n * t, c)), kernel.reshape((c, width)), p2)
        for r in prange(n * t):
            for j in range(width):
                p2[r, j] += bias[j]
    for b in prange(n):
        state = b * (t + 1) * units
        for k in range(units):
            hs[state + k] = h0[b * units + k]
            cs[state + k] = c0[b * units + k]
        for s in range(t):
            tt = t - 1 - s if backwards else s
            row = b * t + tt
            prev, new = state + s * units, state + (s + 1) * units
            out = y[(b * t + (t - 1 - tt if reverses else tt)) * units:] if sequences \
                else y[b * units:]
            if masked and mask[row] == 0.0:
                for k in range(units):
                    hs[new + k] = hs[prev + k]
                    cs[new + k] = cs[prev + k]
                if sequences or s == t - 1:
                    for k in range(units):
                        out[k] = 0.0 if zero_output else hs[prev + k]
                continue
            z = pre[row * width:(row + 1) * width]
            xin = p2[row]
            h_in = rec_in[row * width:(row + 1) * width]
            a = acc[b * width:(b + 1) * width]
            d = drop[b * width:(b + 1) * width]
            first_pass = 2 if cell == GRU else gates  # GRU: the candidate's after r
            for g in range(first_pass):
                for k in range(units):
                    h_in[g * units + k] = hs[prev + k] * d[g * units + k]
            _recurrent_product(h_in, recurrent, a, 0, first_pass, units, width)
            if cell == LBR_GRU:
                for j in range(width):
                    a[j] += bias[width + j]
            for j in range(width):
                z[j] = xin[j] + a[j]
            if cell == VANILLA:
                for k in range(units):
                    hs[new + k] = activate(act, z[k])
            elif cell == LSTM:
                for k in range(units):
                    i = activate(ract, z[k])
                    f = activate(ract, z[units + k])
                    g_ = activate(act, z[2 * units + k])
                    o = activate(ract, z[3 * units + k])
                    cell_state = f * cs[prev + k] + i * g_
                    cs[new + k] = cell_state
                    hs[new + k] = o * activate(act, cell_state)
            else:
                h_cand = 2 * units
                if cell == GRU:  # reset before: (r * h * drop) . U_h
                    for k in range(units):
                        r = activate(ract, z[units + k])
                        h_in[h_cand + k] = r * hs[prev + k] * d[h_cand + k]
                    _recurrent_product(h_in, recurrent, a, 2, 3, units, width)
                    for k in range(units):
                        z[h_cand + k] = xin[h_cand + k] + a[h_cand + k]
                else:  # reset after: r * (h . U_h + b_h)
                    for k in range(units):
                        rh[row * units + k] = a[h_cand + k]
                        z[h_cand + k] = xin[h_cand + k] + activate(
                            ract, z[units + k]) * a[h_cand + k]
                for k in range(units):
                    update = activate(ract, z[k])
                    hs[new + k] = update * hs[prev + k] + (1.0 - update) * activate(
                        act, z[h_cand + k])
            if sequences or s == t - 1:
                for k in range(units):
                    out[k] = hs[new + k]
        for k in range(units):
            h_last[b * units + k] = hs[state + t * units + k]
            c_last[b * units + k] = cs[state + t * units + k]


@njit(inline="always", **SERIAL)
def _recurrent_grad(dz_rec, recurrent, drop, dh_prev, first_gate, last_gate, units, width):
    """dh_prev[k] += sum_g drop[g, k] * sum_j dz_rec[g*units + j] * U[k, g*units + j]."""
    for k in range(units):
        total = np.float32(0.0)
        row = k * width
        for g in range(first_gate, last_gate):
            base = g * units
            part = np.float32(0.0)
            for j in range(units):
                part += dz_rec[base + j] * recurrent[row + base + j]
            total += part * drop[base + k]
        dh_prev[k] += total


@njit(**PARALLEL)
def recurrent_backward(x, kernel, recurrent, mask, drop, dy, dh_last, dc_last, dx, dkernel,
                       drecurrent, dbias, dh0, dc0, pre, rec_in, hs, cs, rh, dz_in, dz_rec,
                       carry, dims, options, need_dx):
    """The gradients of recurrent_forward from those of y and the final states; carry is
    (N, 3 * units) scratch. dbias: the input bias's (G * units), then for a reset_after GRU
    the recurrent one's."""
    n, t, c, units, gates = dims
    cell, act, ract, backwards, reverses, sequences, zero_output, masked, projected = options
    width = gates * units
    h_cand = 2 * units
    for b in prange(n):
        dh = carry[b * 3 * units:b * 3 * units + units]
        dc = carry[b * 3 * units + units:b * 3 * units + 2 * units]
        dh_prev = carry[b * 3 * units + 2 * units:(b + 1) * 3 * units]
        state = b * (t + 1) * units
        for k in range(units):
            dh[k] = dh_last[b * units + k]
            dc[k] = dc_last[b * units + k]
        for s in range(t - 1, -1, -1):
            tt = t - 1 - s if backwards else s
            row = b * t + tt
            prev, new = state + s * units, state + (s + 1) * units
            gin = dz_in[row * width:(row + 1) * width]
            grec = dz_rec[row * width:(row + 1) * width]
            kept = not (masked and mask[row] == 0.0)
            if sequences or s == t - 1:
                out = dy[(b * t + (t - 1 - tt if reverses else tt)) * units:] if sequences \
                    else dy[b * units:]
                if kept or not zero_output:
                    for k in range(units):
                        dh[k] += out[k]
            if not kept:  # the states passed through unchanged
                for j in range(width):
                    gin[j] = 0.0
                    grec[j] = 0.0
                continue
            z = pre[row * width:(row + 1) * width]
            d = drop[b * width:(b + 1) * width]
            for k in range(units):
                dh_prev[k] = 0.0
            if cell == VANILLA:
                for k in range(units):
                    gin[k] = dh[k] * derivative(act, z[k])
                    grec[k] = gin[k]
                _recurrent_grad(grec, recurrent, d, dh_prev, 0, 1, units, width)
            elif cell == LSTM:
                for k in range(units):
                    i = activate(ract, z[k])
                    f = activate(ract, z[units + k])
                    g_ = activate(act, z[2 * units + k])
                    o = activate(ract, z[3 * units + k])
                    c_new = cs[new + k]
                    total = dc[k] + dh[k] * o * derivative(act, c_new)
                    gin[k] = total * g_ * derivative(ract, z[k])
                    gin[units + k] = total * cs[prev + k] * derivative(ract, z[units + k])
                    gin[2 * units + k] = total * i * derivative(act, z[2 * units + k])
                    gin[3 * units + k] = dh[k] * activate(act, c_new) * derivative(
                        ract, z[3 * units + k])
                    dc[k] = total * f
                for j in range(width):
                    grec[j] = gin[j]
                _recurrent_grad(grec, recurrent, d, dh_prev, 0, 4, units, width)
            else:
                for k in range(units):
                    update = activate(ract, z[k])
                    candidate = activate(act, z[h_cand + k])
                    gin[k] = dh[k] * (hs[prev + k] - candidate) * derivative(ract, z[k])
                    gin[h_cand + k] = dh[k] * (1.0 - update) * derivative(act, z[h_cand + k])
                    dh_prev[k] = dh[k] * update
                    grec[k] = gin[k]
                    grec[h_cand + k] = gin[h_cand + k]
                if cell == LBR_GRU:
                    for k in range(units):
                        r = activate(ract, z[units + k])
                        gin[units + k] = gin[h_cand + k] * rh[row * units + k] * derivative(
                            ract, z[units + k])
                        grec[units + k] = gin[units + k]
                        grec[h_cand + k] = gin[h_cand + k] * r
                    _recurrent_grad(grec, recurrent, d, dh_prev, 0, 3, units, width)
                else:  # reset before: the candidate's product read r * h * drop
                    for k in range(units):
                        e = np.float32(0.0)
                        for j in range(units):
                            e += grec[h_cand + j] * recurrent[k * width + h_cand + j]
                        r = activate(ract, z[units + k])
                        gin[units + k] = e * hs[prev + k] * d[h_cand + k] * derivative(
                            ract, z[units + k])
                        grec[units + k] = gin[units + k]
                        dh_prev[k] += e * r * d[h_cand + k]
                    _recurrent_grad(grec, recurrent, d, dh_prev, 0, 2, units, width)
            for k in range(units):
                dh[k] = dh_prev[k]
        for k in range(units):
            dh0[b * units + k] = dh[k]
            dc0[b * units + k] = dc[k]
    _parameter_grads(x, kernel, dx, dkernel, drecurrent, dbias, rec_in, dz_in, dz_rec,
                     n * t, c, units, gates, need_dx, not projected)


@njit(**PARALLEL)
def _parameter_grads(x, kernel, dx, dkernel, drecurrent, dbias, rec_in, dz_in, dz_rec, rows,
                     c, units, gates, need_dx, input_gemms):
    """dx = dz_in . kernel^T and dkernel = x^T . dz_in (one GEMM each; not `input_gemms`:
    recurrent_gate_dropout.py computes them from the gate-masked inputs); drecurrent per
    gate from what each gate's product read; dbias the column sums."""
    width = gates * units
    g_in = dz_in.reshape((rows, width))
    if input_gemms and need_dx:
        np.dot(g_in, kernel.reshape((c, width)).T, dx.reshape((rows, c)))
    if input_gemms:
        np.dot(x.reshape((rows, c)).T, g_in, dkernel.reshape((c, width)))
    for k in prange(units):
        for j in range(width):
            drecurrent[k * width + j] = 0.0
        for r in range(rows):
            for g in range(gates):
                a = rec_in[r * width + g * units + k]
                if a != 0.0:
                    base = r * width + g * units
                    target = k * width + g * units
                    for j in range(units):
                        drecurrent[target + j] += a * dz_rec[base + j]
    for j in prange(width):
        total_in, total_rec = np.float32(0.0), np.float32(0.0)
        for r in range(rows):
            total_in += dz_in[r * width + j]
            total_rec += dz_rec[r * width + j]
        dbias[j] = total_in
        if dbias.size > width:  # a reset_after GRU's recurrent bias
            dbias[width + j] = total_rec


@njit(**PARALLEL)
def draw_recurrent_dropout(drop, keeps, threshold, scale, counter, words):
    """drop (N, G*units) = keep * scale, a new mask each call (dropout.py's counter-based
    hash: counter = [seed, step])."""
    size = drop.size
    salt = step_salt(counter)
    for chunk in prange((size + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        count = min(CHUNK, size - first)
        fill_keeps(first, count, salt, threshold, words[get_thread_id()],
                   keeps[first:first + count])
    for i in prange(size):
        drop[i] = scale * keeps[i]
    counter[1] += np.uint64(1)
