"""RecurrentOp's fused numba path (recurrent_fused.py) against the numpy reference of Keras's
cells and backend rnn: masks (post- and pre-padded rows, a hole, a fully masked row; the
previous output or zeros at masked steps; go_backwards), activations oneDNN's cells lack, and
recurrent dropout with the mask the step drew; outputs, final states and the gradients of the
inputs, initial states and weights (analytic, and by central differences of the reference).
Also the dropout statistics and the choice of path."""

import numpy as np
import pytest
from recurrent_reference import recurrent_reference
from test_ops_recurrent import (
    UNITS,
    C,
    RecurrentHarness,
    T,
    cell_of,
    keras_weights,
    numeric_gradient,
)
from test_ops_recurrent import (
    test_bf16_plan_runs_the_primitive_in_f32_between_conversions as primitive_bf16_check,
)

from kiln.ops.recurrent import RecurrentOp
from kiln.ops.recurrent_cells import LSTM, VANILLA_RNN
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore

# rows: post-padded, pre-padded, a hole, fully masked
MASK = np.array([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0], [0, 0, 0, 0, 0]],
                np.float32)
GATES = {"simple_rnn": 1, "lstm": 4, "gru": 3}

CASES = [
    ("lstm", {"masked": True}),
    ("lstm", {"masked": True, "return_sequences": True, "go_backwards": True}),
    ("lstm", {"masked": True, "return_sequences": True, "zero_output_for_mask": True}),
    ("gru", {"masked": True, "go_backwards": True, "zero_output_for_mask": True}),
    ("gru", {"masked": True, "return_sequences": True}),
    ("gru", {"masked": True, "reset_after": False, "return_sequences": True,
             "go_backwards": True}),
    ("simple_rnn", {"masked": True, "return_sequences": True, "go_backwards": True}),
    ("lstm", {"activation": "relu", "recurrent_activation": "hard_sigmoid",
              "return_sequences": True}),
    ("gru", {"activation": "softsign", "recurrent_activation": "linear",
             "go_backwards": True}),
    ("gru", {"activation": "elu", "recurrent_activation": "softplus", "reset_after": False}),
    ("simple_rnn", {"activation": "selu", "return_sequences": True}),
    ("simple_rnn", {"activation": "silu", "masked": True}),
    ("lstm", {"recurrent_dropout": 0.4, "masked": True, "return_sequences": True}),
    ("gru", {"recurrent_dropout": 0.4, "go_backwards": True}),
    ("gru", {"recurrent_dropout": 0.4, "reset_after": False}),
    ("simple_rnn", {"recurrent_dropout": 0.4, "return_sequences": True}),
]


def make_op(kind, options):
    op = RecurrentOp("rnn", cell_of(kind, options.get("reset_after", True)), UNITS,
                     options.get("activation", "tanh"), True,
                     options.get("return_sequences", False), options.get("go_backwards", False),
                     recurrent_activation=options.get("recurrent_activation", "sigmoid"),
                     recurrent_dropout=options.get("recurrent_dropout", 0.0), seed=5,
                     masked=options.get("masked", False),
                     zero_output_for_mask=options.get("zero_output_for_mask", False))
    return op


@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("kind,options", CASES)
def test_fused_op_against_reference(kind, options, initial_state):
    rng = np.random.default_rng(0)
    n = MASK.shape[0]
    reset_after = options.get("reset_after", True)
    x = rng.normal(0, 1, (n, T, C)).astype(np.float32)
    weights = keras_weights(kind, rng, reset_after=reset_after)
    initial = [rng.normal(0, 0.5, (n, UNITS)).astype(np.float32)
               for _ in range(2 if kind == "lstm" else 1)] if initial_state else []
    masked = options.get("masked", False)
    extra = [MASK] if masked else []
    op = make_op(kind, options)
    harness = RecurrentHarness(op, x, weights, [*initial, *extra], with_states=True,
                               need=[True] * (1 + len(initial)) + [False] * len(extra))
    reference = {k: v for k, v in options.items() if k not in ("masked", "recurrent_dropout")}
    reference["mask"] = MASK if masked else None

    def run_reference(x_, weights_, initial_, drop):
        return recurrent_reference(kind, x_, weights_, UNITS, initial_ or None, drop=drop,
                                   **reference)

    drop = None
    output, states = run_reference(x.astype(np.float64), [w.astype(np.float64)
                                                          for w in weights], initial, None)
    dys = [rng.normal(0, 1, output.shape), *(rng.normal(0, 1, s.shape) for s in states)]
    outputs, grads, weight_grads = harness.run(dys)
    if options.get("recurrent_dropout"):  # the mask this step drew
        drop = op.recurrent_dropout_mask.reshape(n, GATES[kind] * UNITS).astype(np.float64)
        assert 0 < np.mean(drop == 0) < 1
        output, states = run_reference(x.astype(np.float64), [w.astype(np.float64)
                                                              for w in weights], initial, drop)
    np.testing.assert_allclose(outputs[0], output, rtol=1e-4, atol=1e-5)
    for got, state in zip(outputs[1:], states, strict=True):
        np.testing.assert_allclose(got, state, rtol=1e-4, atol=1e-5)

    def objective(x_, weights_, initial_):
        out, finals = run_reference(x_, weights_, initial_, drop)
        return np.sum(out * dys[0]) + sum(np.sum(s * dy) for s, dy in zip(finals, dys[1:],
                                                                           strict=True))

    def check(what, analytic, original, make_args):
        for index in [tuple(rng.integers(0, s) for s in analytic.shape) for _ in range(6)]:
            expected = numeric_gradient(lambda v: objective(*make_args(v)),
                                        original.astype(np.float64), index)
            assert analytic[index] == pytest.approx(expected, rel=2e-3, abs=2e-4), (
                what, index)

    arrays = [x, *initial]
    as64 = [w.astype(np.float64) for w in weights]
    for i, grad in enumerate(grads[:len(arrays)]):
        def with_input(value, i=i):
            inputs = [a.astype(np.float64) for a in arrays]
            inputs[i] = value
            return inputs[0], as64, inputs[1:]
        check(f"input {i}", grad.reshape(arrays[i].shape), arrays[i], with_input)
    if masked:
        assert grads[-1] is None  # a mask has no gradient
    for i, grad in enumerate(weight_grads):
        def with_weight(value, i=i):
            ws = list(as64)
            ws[i] = value
            return x.astype(np.float64), ws, [a.astype(np.float64) for a in initial]
        check(f"weight {i}", grad.reshape(weights[i].shape), weights[i], with_weight)


def test_a_fully_masked_row_keeps_its_initial_state_and_gets_its_whole_gradient():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (4, T, C)).astype(np.float32)
    h0, c0 = (rng.normal(0, 1, (4, UNITS)).astype(np.float32) for _ in range(2))
    op = make_op("lstm", {"masked": True})
    harness = RecurrentHarness(op, x, keras_weights("lstm", rng), [h0, c0, MASK],
                               with_states=True, need=[True, True, True, False])
    dys = [rng.normal(0, 1, (4, UNITS)) for _ in range(3)]
    (output, h, c), grads, _ = harness.run(dys)
    np.testing.assert_allclose(output[3], h0[3], rtol=1e-6)
    np.testing.assert_allclose(c[3], c0[3], rtol=1e-6)
    np.testing.assert_array_equal(grads[0][3], 0.0)  # no step of that row was read
    np.testing.assert_allclose(grads[1][3], dys[0][3] + dys[1][3], rtol=1e-5)
    np.testing.assert_allclose(grads[2][3], dys[2][3], rtol=1e-5)


def test_stateful_kept_states_carry_over_on_the_fused_path():
    """A stateful masked LSTM: each batch starts from the previous batch's final states."""
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, (4, T, C)).astype(np.float32)
    weights = keras_weights("lstm", rng)
    op = make_op("lstm", {"masked": True, "return_sequences": True})
    op.kept_states = {state: np.zeros((4, UNITS), np.float32) for state in ("h", "c")}
    harness = RecurrentHarness(op, x, weights, [MASK], need=[True, False])
    as64 = [w.astype(np.float64) for w in weights]
    states = None
    for _ in range(2):
        (output,), _, _ = harness.run([np.zeros((4, T, UNITS))])
        expected, states = recurrent_reference("lstm", x.astype(np.float64), as64, UNITS,
                                               states, return_sequences=True, mask=MASK)
        np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-5)
        for kept, state in zip(op.kept_states.values(), states, strict=True):
            np.testing.assert_allclose(kept, state, rtol=1e-4, atol=1e-5)


def test_bf16_plan_converts_at_the_edges_of_the_fused_kernel(monkeypatch):
    """The primitive path's bf16 check, run on the fused kernel."""
    monkeypatch.setattr(RecurrentOp, "uses_fused_kernel", lambda self, builder: True)
    primitive_bf16_check()


@pytest.mark.parametrize("kind", ["lstm", "simple_rnn"])
def test_recurrent_dropout_statistics(kind):
    """One mask per sample, gate and unit, drawn anew each step: about `rate` of it zero,
    the rest 1 / (1 - rate)."""
    rng = np.random.default_rng(4)
    rate, n, units = 0.3, 64, 16
    op = RecurrentOp("rnn", LSTM if kind == "lstm" else VANILLA_RNN, units,
                     recurrent_dropout=rate, seed=11)
    x = rng.normal(0, 1, (n, T, C)).astype(np.float32)
    weights = keras_weights(kind, rng, units=units)
    harness = RecurrentHarness(op, x, weights)
    draws = []
    for _ in range(2):
        harness.run([np.zeros((n, units))])
        draws.append(op.recurrent_dropout_mask.copy())
    for drop in draws:
        assert drop.size == n * GATES[kind] * units
        assert abs(np.mean(drop == 0.0) - rate) < 0.03
        np.testing.assert_allclose(drop[drop != 0.0], 1.0 / (1.0 - rate), rtol=1e-6)
    assert not np.array_equal(draws[0], draws[1])


def test_the_path_each_case_takes():
    """oneDNN's primitive for what its cells compute; the fused kernel for masks, recurrent
    dropout in training, other activations."""
    store = ParameterStore()
    training, inference = (PlanBuilder(store, training=flag) for flag in (True, False))
    plain = RecurrentOp("r", LSTM, 3)
    assert not plain.uses_fused_kernel(training)
    assert RecurrentOp("r", LSTM, 3, masked=True).uses_fused_kernel(inference)
    dropout = RecurrentOp("r", LSTM, 3, recurrent_dropout=0.2)
    assert dropout.uses_fused_kernel(training) and not dropout.uses_fused_kernel(inference)
    assert RecurrentOp("r", LSTM, 3, activation="relu").uses_fused_kernel(inference)
    assert not RecurrentOp("r", VANILLA_RNN, 3, activation="relu").uses_fused_kernel(inference)
    assert RecurrentOp("r", VANILLA_RNN, 3, activation="elu").uses_fused_kernel(inference)
    with pytest.raises(ValueError, match=r"'r'.*argument activation"):
        RecurrentOp("r", LSTM, 3, activation="gelu")
