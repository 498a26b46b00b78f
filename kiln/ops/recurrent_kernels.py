"""numba kernels around the oneDNN RNN primitives: what the primitives do not do themselves.

- `reverse_time`: Keras's `go_backwards` returns the output sequence in processing order
  (last input step first), oneDNN's right-to-left direction aligns it with the input: one
  pass reverses the time axis of a plain (N, T, C) buffer (and of its gradient).
- `fold_reset_after_bias` / `unfold_reset_after_bias`: a Keras GRU with `reset_after=True`
  has an input bias and a recurrent bias (2, 3 * units); oneDNN's linear-before-reset GRU
  takes (4, units): the update and reset gates' two biases summed, then the candidate's
  input bias and its recurrent bias (which the reset gate multiplies).
"""

from .numba_config import PARALLEL, njit, prange


@njit(**PARALLEL)
def reverse_time(source, target, batch, steps, channels):
    """target[n, t, :] = source[n, steps - 1 - t, :] over flat (N, T, C) buffers."""
    for row in prange(batch * steps):
        n = row // steps
        t = row - n * steps
        start = row * channels
        mirrored = (n * steps + steps - 1 - t) * channels
        for k in range(channels):
            target[start + k] = source[mirrored + k]


@njit(**PARALLEL)
def fold_reset_after_bias(keras_bias, bias, units):
    """keras_bias (2, 3 * units) flat -> bias (4, units) flat (see the module)."""
    row = 3 * units
    for j in prange(units):
        bias[j] = keras_bias[j] + keras_bias[row + j]
        bias[units + j] = keras_bias[units + j] + keras_bias[row + units + j]
        bias[2 * units + j] = keras_bias[2 * units + j]
        bias[3 * units + j] = keras_bias[row + 2 * units + j]


@njit(**PARALLEL)
def unfold_reset_after_bias(bias_grad, keras_bias_grad, units):
    """The gradient of fold_reset_after_bias: a summed gate's gradient goes to both biases."""
    row = 3 * units
    for j in prange(units):
        for gate in range(2):
            g = bias_grad[gate * units + j]
            keras_bias_grad[gate * units + j] = g
            keras_bias_grad[row + gate * units + j] = g
        keras_bias_grad[2 * units + j] = bias_grad[2 * units + j]
        keras_bias_grad[row + 2 * units + j] = bias_grad[3 * units + j]


# -- both directions in one primitive (bidirectional_recurrent.py) ---------------------------
@njit(**PARALLEL)
def join_directions(first, second, joined):
    """joined = first then second (flat): two layers' weights as oneDNN's D = 2 tensor."""
    size = first.size
    for k in prange(size):
        joined[k] = first[k]
        joined[size + k] = second[k]


@njit(**PARALLEL)
def split_directions(joined, first, second):
    """The gradient of join_directions."""
    size = first.size
    for k in prange(size):
        first[k] = joined[k]
        second[k] = joined[size + k]


@njit(**PARALLEL)
def merge_final_states(states, output, batch, units, concat):
    """The final h of both directions (2, N, units) -> Keras's merged last output: (N,
    2 * units) forward then backward (concat), or their sum (N, units)."""
    half = batch * units
    for n in prange(batch):
        for u in range(units):
            forward, backward = states[n * units + u], states[half + n * units + u]
            if concat:
                output[n * 2 * units + u] = forward
                output[n * 2 * units + units + u] = backward
            else:
                output[n * units + u] = forward + backward


@njit(**PARALLEL)
def split_final_states_grad(grad, states_grad, batch, units, concat):
    """The gradient of merge_final_states."""
    half = batch * units
    for n in prange(batch):
        for u in range(units):
            if concat:
                states_grad[n * units + u] = grad[n * 2 * units + u]
                states_grad[half + n * units + u] = grad[n * 2 * units + units + u]
            else:
                states_grad[n * units + u] = grad[n * units + u]
                states_grad[half + n * units + u] = grad[n * units + u]


@njit(**PARALLEL)
def copy_state(source, target):
    """A stateful layer's kept state into the primitive's initial state, or its final state
    back (flat (N, units) buffers)."""
    for k in prange(source.size):
        target[k] = source[k]
