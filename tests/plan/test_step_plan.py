"""kiln.plan.step_plan.StepPlan: a small conv -> conv -> pool -> flatten -> dense -> softmax
model compiled into one list of calls, checked against a numpy model."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))

from op_checker import (  # noqa: E402
    CHANNELS_FIRST,
    CHANNELS_LAST,
    conv2d_reference,
    dense_reference,
    parameter_specs,
    pool2d_reference,
    softmax_cross_entropy_reference,
)

from kiln.ops.activation import ActivationOp  # noqa: E402
from kiln.ops.conv2d import Conv2DOp  # noqa: E402
from kiln.ops.dense import DenseOp  # noqa: E402
from kiln.ops.flatten import FlattenOp  # noqa: E402
from kiln.ops.pooling import Pooling2DOp  # noqa: E402
from kiln.ops.softmax_cross_entropy import SoftmaxCrossEntropyOp  # noqa: E402
from kiln.plan.parameters import ParameterStore  # noqa: E402
from kiln.plan.step_plan import StepPlan, logical_dims  # noqa: E402
from kiln.runtime.optimizers import AdamUpdater, SGDUpdater  # noqa: E402

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]
H = W = 8
C_IN = 3
FILTERS = 16
CLASSES = 4


def make_ops(filters=(FILTERS, FILTERS)):
    return [Conv2DOp("conv1", filters[0], (3, 3), activation="relu"),
            Conv2DOp("conv2", filters[1], (3, 3), padding="same", activation="tanh"),
            Pooling2DOp("pool", "max", (2, 2), (2, 2)),
            FlattenOp("flatten"),
            DenseOp("dense", CLASSES),
            ActivationOp("softmax", "softmax")]


def input_shape(batch, data_format):
    return (batch, H, W, C_IN) if data_format == CHANNELS_LAST else (batch, C_IN, H, W)


def make_store(ops, data_format, seed=0, batch=1):
    """A ParameterStore with random Keras-layout values; returns (store, {name: value})."""
    rng = np.random.default_rng(seed)
    store, values = ParameterStore(), {}
    dims = logical_dims(input_shape(batch, data_format), data_format)
    for op in ops:
        for key, (param_dims, tag) in parameter_specs(op, dims, data_format).items():
            name = f"{op.name}/{key}"
            if key == "kernel":
                if isinstance(op, Conv2DOp):
                    shape = (*op.kernel_size, param_dims[1], param_dims[0])
                else:
                    shape = (int(np.prod(param_dims[1:])), param_dims[0])
                fan_in = int(np.prod(shape[:-1]))
                value = rng.normal(0, 1.0 / np.sqrt(fan_in), size=shape)
            else:
                value = rng.normal(0, 0.1, size=param_dims)
            values[name] = value.astype(np.float32)
            store.add(name, param_dims, tag, values[name])
        dims = op.output_dims(dims)
    return store, values


def step_plan(ops, shape, data_format, store, loss_head=None, optimizer=None,
              label_shape=None):
    """A StepPlan of the linear graph `ops` on inputs of Keras shape `shape`."""
    from kiln.graph.symbolic import SymbolicTensor
    from kiln.graph.topology import Graph
    source = SymbolicTensor(logical_dims((None, *shape[1:]), data_format), data_format)
    plan = StepPlan(Graph.chain(ops, source), shape[0], store, loss_head, optimizer)
    if label_shape is not None:
        assert plan.labels.shape == label_shape
    return plan


def train_plan(ops, store, batch, data_format, optimizer):
    return step_plan(ops, input_shape(batch, data_format), data_format, store,
                    SoftmaxCrossEntropyOp("softmax"), optimizer, label_shape=(batch, CLASSES))


def probabilities(plan):
    """A training plan's softmax output after its forward calls."""
    return plan.outputs.copy()


def run_forward(plan):
    for call in plan.builder.forward_calls:
        call.run()


def numpy_model(x, labels, params, data_format):
    """Forward and backward of the whole model in float64.

    Returns (probabilities, loss, accuracy, {name: gradient})."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    x = x.astype(np.float64)
    y1 = conv2d_reference(x, p["conv1/kernel"], p["conv1/bias"], activation="relu",
                          data_format=data_format)
    y2 = conv2d_reference(y1, p["conv2/kernel"], p["conv2/bias"], padding="same",
                          activation="tanh", data_format=data_format)
    y3 = pool2d_reference(y2, "max", (2, 2), (2, 2), data_format=data_format)
    # Keras flattens (H, W, C) in both formats
    y3_hwc = y3 if data_format == CHANNELS_LAST else y3.transpose(0, 2, 3, 1)
    logits = dense_reference(y3_hwc, p["dense/kernel"], p["dense/bias"])
    probs, loss, accuracy = softmax_cross_entropy_reference(logits, labels)
    dlogits = (probs - labels) / len(x)
    _, dy3, dkd, dbd = dense_reference(y3_hwc, p["dense/kernel"], p["dense/bias"], dy=dlogits)
    if data_format != CHANNELS_LAST:
        dy3 = dy3.transpose(0, 3, 1, 2)
    _, dy2 = pool2d_reference(y2, "max", (2, 2), (2, 2), data_format=data_format, dy=dy3)
    _, dy1, dk2, db2 = conv2d_reference(y1, p["conv2/kernel"], p["conv2/bias"], padding="same",
                                        activation="tanh", data_format=data_format, dy=dy2)
    _, _, dk1, db1 = conv2d_reference(x, p["conv1/kernel"], p["conv1/bias"], activation="relu",
                                      data_format=data_format, dy=dy1)
    grads = {"conv1/kernel": dk1, "conv1/bias": db1, "conv2/kernel": dk2, "conv2/bias": db2,
             "dense/kernel": dkd, "dense/bias": dbd}
    return probs, loss, accuracy, grads


def batch_data(rng, batch, data_format):
    x = rng.normal(size=input_shape(batch, data_format)).astype(np.float32)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]
    return x, labels


def assert_sgd_step(store, before, grads, lr, names=None):
    for name in names or grads:
        expected_change = -lr * grads[name]
        change = store.get_value(name).reshape(before[name].shape).astype(np.float64) - before[
            name]
        np.testing.assert_allclose(change, expected_change, rtol=2e-3,
                                   atol=2e-3 * np.abs(expected_change).max() + 1e-8,
                                   err_msg=f"SGD update of {name}")


# -- plan structure -----------------------------------------------------------------------

@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("batch", [6, 3])
def test_training_reorders_are_only_edges_and_weight_layouts(data_format, batch):
    """No activation (or activation-gradient) reorder between layers: only the input edge and
    reorders of weights / weight gradients between their stored and primitive layouts."""
    ops = make_ops()
    store, _ = make_store(ops, data_format)
    plan = train_plan(ops, store, batch, data_format, SGDUpdater(0.1))
    parameter_names = set(store.parameters)
    for label in plan.builder.reorder_labels:
        is_input_edge = label == "conv1 input"
        is_weight_layout = any(label in (f"{name} to layout", f"{name} gradient to layout")
                               for name in parameter_names)
        assert is_input_edge or is_weight_layout, f"unexpected reorder {label!r} in " \
                                                  f"{plan.describe()}"
    labels = plan.describe()
    assert "conv1 backward data" not in labels  # the first layer needs no input gradient
    for expected in ("conv1 forward", "conv2 forward", "pool forward", "dense forward",
                     "conv2 backward data", "pool backward", "dense backward weights",
                     "conv1 backward weights"):
        assert expected in labels
    # the model's softmax is not run in training: the loss head fuses it
    assert "softmax softmax" not in labels and "softmax softmax backward" not in labels
    assert "softmax softmax cross-entropy" in labels


def test_same_plan_structure_for_both_data_formats():
    plans = {}
    for data_format in (CHANNELS_LAST, CHANNELS_FIRST):
        ops = make_ops()
        store, _ = make_store(ops, data_format)
        plans[data_format] = train_plan(ops, store, 6, data_format, SGDUpdater(0.1))
    last, first = (plans[f].describe() for f in (CHANNELS_LAST, CHANNELS_FIRST))
    # data_format only changes the input edge
    assert [label for label in last if label != "conv1 input"] == [
        label for label in first if label != "conv1 input"]
    for plan in plans.values():
        run_forward(plan)
    # and the two plans use the same primitive kernels layer by layer
    impl = {f: [call.primitive.pd.implementation for call in plans[f].calls
                if hasattr(call, "primitive") and call.label != "conv1 input"]
            for f in plans}
    assert impl[CHANNELS_LAST] == impl[CHANNELS_FIRST]


# -- numerics -------------------------------------------------------------------------------

@pytest.mark.parametrize("data_format", FORMATS)
def test_one_sgd_step_matches_numpy_model(data_format):
    ops = make_ops()
    store, params = make_store(ops, data_format, seed=1)
    lr = 0.5
    plan = train_plan(ops, store, 6, data_format, SGDUpdater(lr))
    rng = np.random.default_rng(2)
    x, labels = batch_data(rng, 6, data_format)
    plan.inputs[...] = x
    plan.labels[...] = labels
    stats = plan.train_step().copy()
    probs, loss, accuracy, grads = numpy_model(x, labels, params, data_format)
    np.testing.assert_allclose(probabilities(plan), probs, rtol=1e-4, atol=1e-6)
    assert stats[0] == pytest.approx(loss, rel=1e-5)
    assert stats[1] == pytest.approx(accuracy)
    for name in params:  # gradients, read back in Keras layout
        np.testing.assert_allclose(store.get_grad(name).reshape(params[name].shape), grads[name],
                                   rtol=2e-3, atol=2e-3 * np.abs(grads[name]).max(),
                                   err_msg=f"gradient of {name}")
    assert_sgd_step(store, params, grads, lr)


@pytest.mark.parametrize("data_format", FORMATS)
def test_smaller_last_batch_plan_shares_parameters(data_format):
    """A plan for a smaller batch over the same ParameterStore: identical forward on the
    same rows, a correct train step, and the bigger plan sees the updated weights."""
    ops = make_ops()
    store, params = make_store(ops, data_format, seed=3)
    lr = 0.3
    optimizer = SGDUpdater(lr)
    big = train_plan(ops, store, 6, data_format, optimizer)
    small = train_plan(ops, store, 3, data_format, optimizer)
    rng = np.random.default_rng(4)
    x, labels = batch_data(rng, 6, data_format)
    big.inputs[...] = x
    big.labels[...] = labels
    small.inputs[...] = x[:3]
    small.labels[...] = labels[:3]
    run_forward(big)
    run_forward(small)
    np.testing.assert_allclose(probabilities(small), probabilities(big)[:3], rtol=1e-5,
                               atol=1e-7)

    small.train_step()
    probs, loss, _, grads = numpy_model(x[:3], labels[:3], params, data_format)
    assert small.stats[0] == pytest.approx(loss, rel=1e-5)
    assert_sgd_step(store, params, grads, lr)

    updated = {name: store.get_value(name).reshape(value.shape)
               for name, value in params.items()}
    run_forward(big)
    expected, _, _, _ = numpy_model(x, labels, updated, data_format)
    np.testing.assert_allclose(probabilities(big), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
def test_inference_plans_for_two_batch_sizes_agree_with_training_forward(data_format):
    ops = make_ops()
    store, params = make_store(ops, data_format, seed=5)
    trainer = train_plan(ops, store, 6, data_format, SGDUpdater(0.1))
    predict_big = step_plan(ops, input_shape(6, data_format), data_format, store)
    predict_small = step_plan(ops, input_shape(2, data_format), data_format, store)
    x, labels = batch_data(np.random.default_rng(6), 6, data_format)
    trainer.inputs[...] = x
    run_forward(trainer)
    predict_big.inputs[...] = x
    predict_small.inputs[...] = x[4:]
    big = predict_big.predict_step().copy()
    small = predict_small.predict_step().copy()
    assert big.shape == (6, CLASSES) and small.shape == (2, CLASSES)
    np.testing.assert_allclose(small, big[4:], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(big, probabilities(trainer), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(big.sum(axis=1), 1.0, rtol=1e-5)
    # the user's output array is not a plan buffer: the next step does not overwrite a copy
    assert predict_big.outputs is predict_big.predict_step()


def toy_problem(rng, n, data_format):
    """Class k = a bright 3x3 blob in quadrant k (plus noise): learnable by this model."""
    labels = rng.integers(0, CLASSES, n)
    x = rng.normal(0, 0.3, size=(n, H, W, C_IN)).astype(np.float32)
    for i, k in enumerate(labels):
        r, c = (k // 2) * 4 + rng.integers(0, 2), (k % 2) * 4 + rng.integers(0, 2)
        x[i, r:r + 3, c:c + 3, :] += 1.5
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return x, np.eye(CLASSES, dtype=np.float32)[labels]


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
def test_training_learns_a_toy_problem(data_format):
    ops = make_ops()
    store, _ = make_store(ops, data_format, seed=7)
    batch = 32
    plan = train_plan(ops, store, batch, data_format, AdamUpdater(0.01))
    rng = np.random.default_rng(8)
    batches = [toy_problem(rng, batch, data_format) for _ in range(4)]
    losses = []
    for step in range(30):
        x, labels = batches[step % len(batches)]
        plan.inputs[...] = x
        plan.labels[...] = labels
        losses.append(float(plan.train_step()[0]))
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-4:]) < 0.5 * np.mean(losses[:4])
    x_test, labels_test = toy_problem(np.random.default_rng(9), 64, data_format)
    predictor = step_plan(ops, input_shape(64, data_format), data_format, store)
    predictor.inputs[...] = x_test
    accuracy = np.mean(predictor.predict_step().argmax(1) == labels_test.argmax(1))
    assert accuracy > 0.9


def test_second_conv_with_few_channels_can_be_planned():
    ops = make_ops(filters=(8, 8))
    store, _ = make_store(ops, CHANNELS_LAST)
    plan = train_plan(ops, store, 4, CHANNELS_LAST, SGDUpdater(0.1))
    assert "conv2 backward weights" in plan.describe()
