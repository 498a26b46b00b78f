"""RecurrentOp (oneDNN RNN primitives) against a numpy reference of Keras's cells: outputs,
final states, gradients of the inputs, the initial states and the weights (analytic, and by
central differences of the reference)."""

import numpy as np
import pytest
from recurrent_reference import recurrent_reference

from kiln.binding import constants as dnnl
from kiln.binding.memory import Memory, MemoryDesc
from kiln.ops.recurrent import RecurrentOp
from kiln.ops.recurrent_cells import GRU, LBR_GRU, LSTM, VANILLA_RNN
from kiln.ops.recurrent_state import RecurrentStateOp
from kiln.ops.tensor import Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore

N, T, C, UNITS = 3, 5, 4, 6
CELLS = {"lstm": LSTM, "simple_rnn": VANILLA_RNN}


def cell_of(kind, reset_after=True):
    if kind == "gru":
        return LBR_GRU if reset_after else GRU
    return CELLS[kind]


def keras_weights(kind, rng, units=UNITS, channels=C, use_bias=True, reset_after=True):
    gates = {"lstm": 4, "gru": 3, "simple_rnn": 1}[kind]
    weights = [rng.normal(0, 0.5, (channels, gates * units)),
               rng.normal(0, 0.5, (units, gates * units))]
    if use_bias:
        shape = (2, 3 * units) if kind == "gru" and reset_after else (gates * units,)
        weights.append(rng.normal(0, 0.5, shape))
    return [w.astype(np.float32) for w in weights]


class RecurrentHarness:
    """One RecurrentOp (and its state nodes) planned for training on plain inputs."""

    def __init__(self, op, x, weights, initial=(), with_states=False, need=None):
        self.op = op
        self.store = ParameterStore()
        dims = [x.shape] + [s.shape for s in initial]
        self.names = op.parameter_names(dims)
        for name, (pdims, tag), value in zip(self.names, op.parameter_dims(dims).values(),
                                             weights, strict=True):
            self.store.add(name, pdims, tag, value)
        builder = PlanBuilder(self.store, training=True)
        self.inputs = [Memory(MemoryDesc.with_tag(d, dnnl.f32)) for d in dims]
        for memory, value in zip(self.inputs, [x, *initial], strict=True):
            memory.as_array()[:] = value.reshape(-1)
        need = [True] * len(dims) if need is None else need
        output, backward = op.forward(builder, [Tensor(m) for m in self.inputs], need)
        outputs, backwards = [output], []
        if with_states:
            for state in op.states:
                state_op = RecurrentStateOp(f"{op.name}/{state}", state, op.units)
                tensor, state_backward = state_op.forward(builder, output)
                outputs.append(tensor)
                backwards.append(state_backward)
        self.outputs = [builder.keep(o.memory) for o in outputs]
        self.dys = [Memory(o.memory.desc) for o in outputs]
        for state_backward, dy in zip(reversed(backwards), reversed(self.dys[1:]), strict=True):
            zero = state_backward(dy)
            if zero is not None:
                assert not np.any(zero.as_array())
        grads = backward(self.dys[0])
        self.grads = [None if g is None else builder.keep(g) for g in grads]
        builder.finish()
        self.store.pack()
        self.calls = builder.forward_calls + builder.backward_calls

    def run(self, dys):
        for memory, dy in zip(self.dys, dys, strict=True):
            memory.as_array()[:] = np.asarray(dy, np.float32).reshape(-1)
        for call in self.calls:
            call.run()
        outputs = [m.as_array().reshape(m.desc.dims).copy() for m in self.outputs]
        grads = [None if g is None else g.as_array().reshape(g.desc.dims).copy()
                 for g in self.grads]
        weight_grads = [self.store.get_grad(name) for name in self.names]
        return outputs, grads, weight_grads


def objective(kind, x, weights, initial, dys, **options):
    output, states = recurrent_reference(kind, x, weights, UNITS, initial or None, **options)
    total = np.sum(output * dys[0])
    for state, dy in zip(states, dys[1:], strict=False):
        total += np.sum(state * dy)
    return total


def numeric_gradient(f, array, index, eps=1e-4):
    plus, minus = array.copy(), array.copy()
    plus[index] += eps
    minus[index] -= eps
    return (f(plus) - f(minus)) / (2 * eps)


CASES = [
    ("lstm", {}), ("lstm", {"return_sequences": True}), ("lstm", {"go_backwards": True}),
    ("lstm", {"return_sequences": True, "go_backwards": True}),
    ("gru", {}), ("gru", {"return_sequences": True, "go_backwards": True}),
    ("gru", {"reset_after": False}), ("gru", {"reset_after": False, "return_sequences": True}),
    ("simple_rnn", {}), ("simple_rnn", {"return_sequences": True, "activation": "relu"}),
    ("simple_rnn", {"activation": "sigmoid", "go_backwards": True}),
    ("simple_rnn", {"activation": "linear", "return_sequences": True}),
    ("lstm", {"use_bias": False}), ("gru", {"use_bias": False, "go_backwards": True}),
    ("gru", {"use_bias": False, "reset_after": False}), ("simple_rnn", {"use_bias": False}),
]


@pytest.mark.parametrize("with_states", [False, True])
@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("kind,options", CASES)
def test_recurrent_op_against_reference(kind, options, initial_state, with_states):
    rng = np.random.default_rng(0)
    reset_after, use_bias = options.get("reset_after", True), options.get("use_bias", True)
    x = rng.normal(0, 1, (N, T, C)).astype(np.float32)
    weights = keras_weights(kind, rng, use_bias=use_bias, reset_after=reset_after)
    count = 2 if kind == "lstm" else 1
    initial = [rng.normal(0, 0.5, (N, UNITS)).astype(np.float32) for _ in range(count)] \
        if initial_state else []
    sequences, backwards = options.get("return_sequences", False), options.get(
        "go_backwards", False)
    op = RecurrentOp("rnn", cell_of(kind, reset_after), UNITS,
                     options.get("activation", "tanh"), use_bias, sequences, backwards)
    options = {k: v for k, v in options.items() if k != "use_bias"}  # the weights tell
    harness = RecurrentHarness(op, x, weights, initial, with_states)
    output, states = recurrent_reference(kind, x.astype(np.float64),
                                         [w.astype(np.float64) for w in weights], UNITS,
                                         initial or None, **options)
    dys = [rng.normal(0, 1, output.shape)]
    if with_states:
        dys += [rng.normal(0, 1, s.shape) for s in states]
    outputs, grads, weight_grads = harness.run(dys)
    np.testing.assert_allclose(outputs[0], output, rtol=1e-4, atol=1e-5)
    for got, state in zip(outputs[1:], states, strict=False):
        np.testing.assert_allclose(got, state, rtol=1e-4, atol=1e-5)

    def check(what, analytic, original, make_args):
        for index in [tuple(rng.integers(0, s) for s in analytic.shape) for _ in range(6)]:
            def f(value):
                return objective(kind, *make_args(value), dys, **options)
            expected = numeric_gradient(f, original.astype(np.float64), index)
            assert analytic[index] == pytest.approx(expected, rel=2e-3, abs=2e-4), (
                what, index)

    def with_input(i):
        def make(value):
            arrays = [a.astype(np.float64) for a in [x, *initial]]
            if value is not None:
                arrays[i] = value
            return arrays[0], [w.astype(np.float64) for w in weights], arrays[1:] or None
        return make

    def with_weight(i):
        def make(value):
            ws = [w.astype(np.float64) for w in weights]
            if value is not None:
                ws[i] = value
            return x.astype(np.float64), ws, [s.astype(np.float64) for s in initial] or None
        return make

    arrays = [x, *initial]
    assert len(grads) == len(arrays)
    for i, grad in enumerate(grads):
        check(f"input {i}", grad.reshape(arrays[i].shape), arrays[i], with_input(i))
    for i, grad in enumerate(weight_grads):
        check(f"weight {i}", grad.reshape(weights[i].shape), weights[i], with_weight(i))


def test_two_steps_overwrite_weight_gradients():
    """The RNN backward adds into its weight gradients unless told to overwrite them."""
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (N, T, C)).astype(np.float32)
    weights = keras_weights("lstm", rng)
    harness = RecurrentHarness(RecurrentOp("rnn", LSTM, UNITS), x, weights)
    dys = [rng.normal(0, 1, (N, UNITS))]
    first = harness.run(dys)[2]
    second = harness.run(dys)[2]
    for a, b in zip(first, second, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_bf16_plan_runs_the_primitive_in_f32_between_conversions():
    """Under a bf16 plan the op reads bf16 activations and hands bf16 on; the primitive runs
    in f32 (no native bf16 RNN is assumed), so the result is the f32 one rounded."""
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (N, T, C)).astype(np.float32)
    weights = keras_weights("gru", rng)
    store = ParameterStore()
    op = RecurrentOp("rnn", LBR_GRU, UNITS, return_sequences=True, go_backwards=True)
    for name, (dims, tag), value in zip(op.parameter_names([x.shape]),
                                        op.parameter_dims([x.shape]).values(), weights,
                                        strict=True):
        store.add(name, dims, tag, value)
    builder = PlanBuilder(store, training=True, data_type=dnnl.bf16)
    source = Memory(MemoryDesc.with_tag(x.shape, dnnl.f32))
    source.as_array()[:] = x.reshape(-1)
    bf16_input = builder.reorder(source, MemoryDesc.with_tag(x.shape, dnnl.bf16), "to bf16")
    output, backward = op.forward(builder, [Tensor(bf16_input)], [True])
    assert output.memory.desc.data_type == dnnl.bf16
    result = builder.keep(builder.reorder(output.memory, MemoryDesc.with_tag(
        output.dims, dnnl.f32), "to f32"))
    dy = Memory(MemoryDesc.with_tag(output.dims, dnnl.f32))
    dy_values = rng.normal(0, 1, output.dims).astype(np.float32)
    dy.as_array()[:] = dy_values.reshape(-1)
    grad = builder.keep(backward(builder.reorder(dy, MemoryDesc.with_tag(
        output.dims, dnnl.bf16), "dy to bf16", backward=True))[0])
    builder.finish()
    store.pack()
    for call in builder.forward_calls + builder.backward_calls:
        call.run()
    expected, _ = recurrent_reference("gru", x.astype(np.float64), weights, UNITS,
                                      return_sequences=True, go_backwards=True)
    np.testing.assert_allclose(result.as_array().reshape(expected.shape), expected,
                               rtol=2e-2, atol=2e-2)
    assert grad.desc.data_type == dnnl.f32
    analytic = grad.as_array().reshape(x.shape)
    eps, index = 1e-3, (1, 2, 0)

    def f(value):
        return objective("gru", value, weights, [], [dy_values], return_sequences=True,
                         go_backwards=True)
    assert analytic[index] == pytest.approx(numeric_gradient(f, x.astype(np.float64), index,
                                                             eps), rel=5e-2, abs=5e-2)
