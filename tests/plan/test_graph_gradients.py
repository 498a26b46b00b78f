"""Whole-graph gradients: every weight gradient a training plan computes, for graphs with
fan-out (summed gradients), layers called twice (summed weight gradients), merges, batch
norm, concatenation and frozen layers, against central differences of the plan's own loss.

The plan runs with SGD(learning_rate=0), so a step computes the loss and the gradients
without moving the weights; the loss is then a deterministic function of the weights."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras import layers as L


def plan_of(model, x, y):
    plan = model._plan(True, len(x))
    plan.use_input([np.ascontiguousarray(a) for a in x] if isinstance(x, list) else
                   np.ascontiguousarray(x), y)
    return plan


def aligned(array):
    from kiln.binding.memory import aligned_bytes
    out = aligned_bytes(array.nbytes).view(np.float32).reshape(array.shape)
    out[...] = array
    return out


def check_model_gradients(model, x, y, entries=6, eps=2e-3, rtol=5e-2, atol=2e-4, seed=0):
    """Compare the plan's weight gradients with central differences of its loss. An entry
    whose differences with steps eps and eps/2 disagree sits on a kink (a relu switching
    inside the step) and is skipped; at least half of the picked entries must be checked."""
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.0))
    xs = [aligned(a) for a in (x if isinstance(x, list) else [x])]
    plan = model._plan(True, len(y))
    plan.use_input(xs if len(xs) > 1 else xs[0], y)

    def loss():
        return float(plan.train_step()[0])

    loss()
    # read every gradient before any perturbation runs the step again
    grads = {w.path: model.store.get_grad(w.path).reshape(w.shape)
             for w in model.trainable_weights}
    rng = np.random.default_rng(seed)
    checked = picked = 0
    for weight in model.trainable_weights:
        grad = grads[weight.path]
        value = weight.numpy()

        def difference(index, step):
            """(central difference, one-sided slopes' gap): a relu whose input is exactly 0
            (a dead unit's zero output meeting a zero bias) is a kink at the point itself,
            where the central difference averages the two sides at any step."""
            original = value[index]
            results = []
            for sign in (1, -1):
                value[index] = original + sign * step
                weight.assign(value)
                results.append(loss())
            value[index] = original
            weight.assign(value)
            at = loss()
            gap = abs((results[0] - at) - (at - results[1])) / step
            return (results[0] - results[1]) / (2 * step), gap

        for flat in rng.choice(value.size, size=min(entries, value.size), replace=False):
            index = np.unravel_index(flat, value.shape)
            picked += 1
            (numeric, _), (finer, gap) = difference(index, eps), difference(index, eps / 2)
            if abs(numeric - finer) > rtol * abs(finer) + atol or gap > rtol * abs(finer) + atol:
                continue  # not smooth here
            assert grad[index] == pytest.approx(finer, rel=rtol, abs=atol), (
                weight.path, index, grad[index], finer)
            checked += 1
    assert checked >= picked / 2, f"only {checked} of {picked} entries were smooth"
    return checked


def data(shape, classes=3, count=8, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, *shape)).astype(np.float32)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, count)]
    return x, y


def test_fan_out_gradients_are_summed():
    keras.initializers.set_random_seed(0)
    inputs = keras.Input((5,))
    a = L.Dense(6, activation="tanh")(inputs)
    b1 = L.Dense(4, activation="relu")(a)   # `a` feeds three consumers
    b2 = L.Dense(4, activation="sigmoid")(a)
    b3 = L.Dense(4)(a)
    merged = L.add([b1, b2, b3])
    outputs = L.Dense(3, activation="softmax")(L.concatenate([merged, a]))
    x, y = data((5,))
    assert check_model_gradients(keras.Model(inputs, outputs), x, y) > 20


def test_a_layer_called_twice_gets_the_sum_of_both_gradients():
    keras.initializers.set_random_seed(1)
    first, second = keras.Input((4,)), keras.Input((4,))
    shared = L.Dense(5, activation="tanh")
    merged = L.subtract([shared(first), shared(second)])
    outputs = L.Dense(3, activation="softmax")(merged)
    model = keras.Model([first, second], outputs)
    assert len(model.weights) == 4  # one kernel and bias for both calls
    x1, y = data((4,), seed=2)
    x2, _ = data((4,), seed=3)
    check_model_gradients(model, [x1, x2], y)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_residual_block_with_batch_norm(data_format):
    keras.initializers.set_random_seed(2)
    shape = (6, 6, 3) if data_format == "channels_last" else (3, 6, 6)
    axis = -1 if data_format == "channels_last" else 1
    f = dict(data_format=data_format)
    inputs = keras.Input(shape)
    x = L.Conv2D(8, 3, padding="same", **f)(inputs)
    x = L.BatchNormalization(axis=axis)(x)
    # smooth activations: central differences across a relu kink are meaningless (the relu
    # versions, fused into batch norm and add, are checked against real Keras)
    x = L.Activation("tanh")(x)
    y = L.Conv2D(8, 3, padding="same", **f)(x)
    y = L.BatchNormalization(axis=axis)(y)
    x = L.Activation("sigmoid")(L.add([x, y]))  # x feeds the conv and the shortcut
    x = L.AveragePooling2D(2, **f)(x)
    outputs = L.Dense(3, activation="softmax")(L.Flatten(**f)(x))
    model = keras.Model(inputs, outputs)
    x, y = data(shape, count=8, seed=4)
    check_model_gradients(model, x, y, entries=4)


@pytest.mark.parametrize("kind", ["dense", "channels_last", "channels_first"])
def test_relu_residual_outputs_feeding_the_next_block(kind):
    # b = relu(a + f(a)) feeds the next block's layer and its shortcut: b's gradient sum and
    # the relu backward of its add run as one fused pass (see eltwise_backward)
    keras.initializers.set_random_seed(3)
    if kind == "dense":
        shape, layer, pool = (6,), (lambda: L.Dense(6)), None
    else:
        shape = (5, 5, 4) if kind == "channels_last" else (4, 5, 5)
        f = dict(data_format=kind, padding="same")
        layer, pool = (lambda: L.Conv2D(4, 3, **f)), L.Flatten(data_format=kind)
    inputs = keras.Input(shape)
    a = L.Activation("relu")(layer()(inputs))
    b = L.Activation("relu")(L.add([a, layer()(a)]))
    c = L.Activation("relu")(L.add([b, layer()(b)]))
    outputs = L.Dense(3, activation="softmax")(pool(c) if pool else c)
    model = keras.Model(inputs, outputs)
    x, y = data(shape, count=8, seed=5)
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.0))
    labels = [call.label for call in model._plan(True, 8).calls]
    assert any("gradient sum and relu backward" in label for label in labels)
    check_model_gradients(model, x, y, entries=5)


def test_frozen_layer_gets_no_update_and_its_input_still_learns():
    keras.initializers.set_random_seed(3)
    inputs = keras.Input((4,))
    first = L.Dense(5, activation="tanh")
    frozen = L.Dense(5, activation="tanh")
    frozen.trainable = False
    outputs = L.Dense(3, activation="softmax")(frozen(first(inputs)))
    model = keras.Model(inputs, outputs)
    assert [w.path for w in model.trainable_weights] == [
        f"{first.name}/kernel", f"{first.name}/bias", f"{model.layers[-1].name}/kernel",
        f"{model.layers[-1].name}/bias"]
    x, y = data((4,), seed=5)
    check_model_gradients(model, x, y)
    before = frozen.get_weights()
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.5))
    start = first.get_weights()
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    for a, b in zip(before, frozen.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(start[0], first.get_weights()[0])
    plan = model._plan(True, 8)
    assert not any(frozen.name in label and "backward weights" in label
                   for label in plan.describe())
