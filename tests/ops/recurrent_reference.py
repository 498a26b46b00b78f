"""numpy references of Keras 3's SimpleRNN, LSTM and GRU (float64), written from Keras's cell
equations: x (N, T, C), Keras weights, optional initial states; returns (output, final
states)."""

import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


ACTIVATIONS = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "sigmoid": sigmoid,
               "linear": lambda z: z}


def _steps(x, go_backwards):
    order = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    return [x[:, t] for t in order]


def recurrent_reference(kind, x, weights, units, initial=None, activation="tanh",
                        return_sequences=False, go_backwards=False, reset_after=True):
    """kind: 'simple_rnn', 'lstm' or 'gru'; weights: [kernel, recurrent_kernel, (bias)]."""
    kernel, recurrent = weights[0], weights[1]
    bias = weights[2] if len(weights) > 2 else None
    n = x.shape[0]
    states = [np.zeros((n, units)) for _ in range(2 if kind == "lstm" else 1)]
    if initial is not None:
        states = [np.asarray(s, dtype=np.float64) for s in initial]
    outputs = []
    for xt in _steps(x, go_backwards):
        h = states[0]
        if kind == "simple_rnn":
            z = xt @ kernel + h @ recurrent + (0 if bias is None else bias)
            h = ACTIVATIONS[activation](z)
            states = [h]
        elif kind == "lstm":
            c = states[1]
            z = xt @ kernel + h @ recurrent + (0 if bias is None else bias)
            i, f, g, o = (z[:, k * units:(k + 1) * units] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            states = [h, c]
        else:
            if bias is None:
                input_bias, recurrent_bias = 0.0, 0.0
            elif reset_after:
                input_bias, recurrent_bias = bias[0], bias[1]
            else:
                input_bias, recurrent_bias = bias, 0.0
            xz = xt @ kernel + input_bias
            part = slice(0, 2 * units)
            if reset_after:
                hz = h @ recurrent + recurrent_bias
                zr = sigmoid(xz[:, part] + hz[:, part])
                update, reset = zr[:, :units], zr[:, units:]
                candidate = np.tanh(xz[:, 2 * units:] + reset * hz[:, 2 * units:])
            else:
                zr = sigmoid(xz[:, part] + h @ recurrent[:, part])
                update, reset = zr[:, :units], zr[:, units:]
                candidate = np.tanh(xz[:, 2 * units:] + (reset * h) @ recurrent[:, 2 * units:])
            h = update * h + (1 - update) * candidate
            states = [h]
        outputs.append(states[0])
    output = np.stack(outputs, axis=1) if return_sequences else states[0]
    return output, states
