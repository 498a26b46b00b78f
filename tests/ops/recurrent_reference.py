"""numpy references of Keras 3's SimpleRNN, LSTM and GRU (float64), written from Keras's cell
equations and its backend rnn (masks): x (N, T, C), Keras weights, optional initial states, an
optional (N, T) mask, recurrent dropout masks (N, G * units) and input dropout masks
(G, N, C) applied per gate as Keras 3's implementation 1; returns (output, final states)."""

import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "sigmoid": sigmoid,
               "linear": lambda z: z,
               "hard_sigmoid": lambda z: np.clip(z + 3.0, 0.0, 6.0) / 6.0,
               "elu": lambda z: np.where(z > 0, z, np.expm1(np.minimum(z, 0.0))),
               "softplus": lambda z: np.logaddexp(z, 0.0),
               "softsign": lambda z: z / (1.0 + np.abs(z)),
               "selu": lambda z: SELU_SCALE * np.where(z > 0, z, SELU_ALPHA * np.expm1(
                   np.minimum(z, 0.0))),
               "exponential": np.exp, "silu": lambda z: z * sigmoid(z),
               "relu6": lambda z: np.clip(z, 0.0, 6.0)}


def _steps(x, go_backwards):
    order = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    return [x[:, t] for t in order]


def recurrent_reference(kind, x, weights, units, initial=None, activation="tanh",
                        return_sequences=False, go_backwards=False, reset_after=True,
                        recurrent_activation="sigmoid", mask=None, zero_output_for_mask=False,
                        drop=None, input_masks=None):
    """kind: 'simple_rnn', 'lstm' or 'gru'; weights: [kernel, recurrent_kernel, (bias)]."""
    act, ract = ACTIVATIONS[activation], ACTIVATIONS[recurrent_activation]
    gates = {"simple_rnn": 1, "lstm": 4, "gru": 3}[kind]
    drop = np.ones((x.shape[0], gates * units)) if drop is None else drop
    drops = [drop[:, g * units:(g + 1) * units] for g in range(gates)]
    if input_masks is None:
        input_masks = np.ones((gates, *x.shape[::2]))
    keeps = _steps(np.ones(x.shape[:2]) if mask is None else mask, go_backwards)
    kernel, recurrent = weights[0], weights[1]
    bias = weights[2] if len(weights) > 2 else None
    n = x.shape[0]
    states = [np.zeros((n, units)) for _ in range(2 if kind == "lstm" else 1)]
    if initial is not None:
        states = [np.asarray(s, dtype=np.float64) for s in initial]
    outputs = []
    blocks_in = [kernel[:, g * units:(g + 1) * units] for g in range(gates)]
    for xt, keep in zip(_steps(x, go_backwards), keeps, strict=True):
        old = states
        projected = np.concatenate([(xt * input_masks[g]) @ blocks_in[g]
                                    for g in range(gates)], axis=1)
        h = states[0]
        if kind == "simple_rnn":
            z = projected + (h * drops[0]) @ recurrent + (0 if bias is None else bias)
            h = act(z)
            states = [h]
        elif kind == "lstm":
            c = states[1]
            z = projected + (0 if bias is None else bias)
            z = z + np.concatenate([(h * drops[g]) @ recurrent[:, g * units:(g + 1) * units]
                                    for g in range(4)], axis=1)
            i, f, g, o = (z[:, k * units:(k + 1) * units] for k in range(4))
            c = ract(f) * c + ract(i) * act(g)
            h = ract(o) * act(c)
            states = [h, c]
        else:
            if bias is None:
                input_bias, recurrent_bias = 0.0, 0.0
            elif reset_after:
                input_bias, recurrent_bias = bias[0], bias[1]
            else:
                input_bias, recurrent_bias = bias, 0.0
            xz = projected + input_bias
            blocks = [recurrent[:, g * units:(g + 1) * units] for g in range(3)]
            hz = np.concatenate([(h * drops[g]) @ blocks[g] for g in range(3)], axis=1)
            part = slice(0, 2 * units)
            if reset_after:
                hz = hz + recurrent_bias
                zr = ract(xz[:, part] + hz[:, part])
                update, reset = zr[:, :units], zr[:, units:]
                candidate = act(xz[:, 2 * units:] + reset * hz[:, 2 * units:])
            else:
                zr = ract(xz[:, part] + hz[:, part])
                update, reset = zr[:, :units], zr[:, units:]
                candidate = act(xz[:, 2 * units:] + (reset * h * drops[2]) @ blocks[2])
            h = update * h + (1 - update) * candidate
            states = [h]
        keep = keep[:, None] > 0
        output = np.where(keep, states[0], 0.0 if zero_output_for_mask else old[0])
        states = [np.where(keep, new, previous) for new, previous in zip(states, old,
                                                                          strict=True)]
        outputs.append(output)
    output = np.stack(outputs, axis=1) if return_sequences else outputs[-1]
    return output, states
