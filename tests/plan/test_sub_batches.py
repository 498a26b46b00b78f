"""kiln.plan.sub_batches: which ops run in sub-batches, and plans that do train and predict
exactly like whole-batch plans."""

import numpy as np
import pytest

from kiln import keras
from kiln.bench.models import cifar10_cnn, mnist_cnn
from kiln.binding import constants as dnnl
from kiln.keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from kiln.plan import sub_batches
from kiln.plan.step_plan import logical_dims


def front_and_size(model, batch, itemsize=4):
    dims = logical_dims((batch, *model.input_shape_without_batch), model.data_format)
    return sub_batches.choose(model.ops[:-1], dims, itemsize)


@pytest.fixture
def built():
    def build(make, data_format="channels_last"):
        model, shape, _ = make(data_format)
        model.build()
        model.input_shape_without_batch = shape
        return model
    return build


def test_choice_for_the_classic_models(built):
    mnist = built(mnist_cnn)
    # conv, conv, pool+dropout: 64 x 24 x 24 floats (147 KB) per image, 8 images per 2 MB
    assert front_and_size(mnist, 128) == (3, 8)
    assert front_and_size(mnist, 128, itemsize=2) == (3, 8 * 2)
    assert front_and_size(mnist, 96) == (3, 12)
    assert front_and_size(mnist, 8) == (0, 8)      # the whole batch fits already
    assert front_and_size(mnist, 127) == (0, 127)  # no divisor of 8 images or more fits
    cifar = built(cifar10_cnn, "channels_first")
    assert front_and_size(cifar, 16) == (0, 16)    # 16 images of 32 x 32 x 32 floats: 2 MB
    assert front_and_size(cifar, 32) == (6, 16)    # up to the Flatten


def test_only_cheap_first_convolutions_are_recomputed():
    from kiln.ops import Conv2DOp
    assert sub_batches.recomputable(Conv2DOp("c", 32, (3, 3)), (16, 3, 32, 32))
    assert not sub_batches.recomputable(Conv2DOp("c", 32, (3, 3)), (16, 4, 32, 32))
    assert not sub_batches.recomputable(Conv2DOp("c", 32, (5, 5)), (16, 2, 32, 32))


def test_no_convolution_no_sub_batches():
    from kiln.ops import DenseOp, DropoutOp
    assert sub_batches.choose([DropoutOp("d", 0.5, 1), DenseOp("x", 4)], (512, 64, 32, 32),
                              4) == (0, 512)


def small_model(data_format, dropout):
    keras.backend.clear_session()  # layer names from scratch: conv2d, ..., dense
    keras.initializers.set_random_seed(5)
    shape = (12, 12, 2) if data_format == "channels_last" else (2, 12, 12)
    layers = [Conv2D(16, 3, activation="relu", input_shape=shape, data_format=data_format),
              Conv2D(16, 3, activation="relu", padding="same", data_format=data_format),
              MaxPooling2D(data_format=data_format)]
    if dropout:
        layers.append(Dropout(0.5, seed=3))
    layers += [Flatten(data_format=data_format), Dense(4, activation="softmax")]
    model = keras.Sequential(layers)
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(0.01))
    return model


def data(data_format, count=32):
    rng = np.random.default_rng(2)
    shape = (count, 12, 12, 2) if data_format == "channels_last" else (count, 2, 12, 12)
    x = rng.normal(size=shape).astype(np.float32)
    return x, np.eye(4, dtype=np.float32)[rng.integers(0, 4, count)]


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_sub_batched_plans_train_and_predict_like_whole_batches(data_format, monkeypatch):
    x, y = data(data_format)
    whole = small_model(data_format, dropout=False)
    whole_history = whole.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    assert whole._plan(True, 16).sub_batch == 0
    whole_predictions = whole.predict(x, batch_size=16)
    # (small_model's clear_session drops every model's plans: `whole` is not run again below,
    # or its plans would be rebuilt with the smaller budget)
    # 12 x 12 x 16 floats per image: a budget of 4 images' worth cuts 16 into 4 sub-batches
    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 4 * 12 * 12 * 16 * 4)
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 2)
    sliced = small_model(data_format, dropout=False)
    history = sliced.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    assert sliced._plan(True, 16).sub_batch == 4
    assert sliced._plan(False, 16).sub_batch == 4
    # the first conv (2 channels x 3 x 3 per output) runs again before each backward
    assert sliced._plan(True, 16).describe().count("conv2d forward again for backward") == 4
    # the weight gradients are sums over sub-batches: equal up to rounding
    np.testing.assert_allclose(history.history["loss"], whole_history.history["loss"],
                               rtol=1e-5)
    for a, b in zip(sliced.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
    np.testing.assert_allclose(sliced.predict(x, batch_size=16), whole_predictions,
                               rtol=1e-4, atol=1e-6)


def test_each_sub_batch_draws_its_own_dropout_mask(monkeypatch):
    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 4 * 12 * 12 * 16 * 4)
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 2)
    model = small_model("channels_last", dropout=True)
    model.build()
    plan = model._plan(True, 16)
    assert plan.sub_batch == 4
    plan.inputs[...] = data("channels_last", 1)[0]  # the same image 16 times
    plan.train_step()
    dense = next(call for call in plan.calls if call.label == "dense forward")
    kept = dense.args[dnnl.ARG_SRC].as_array().reshape(16, -1) != 0
    assert 0.3 < kept.mean() < 0.7
    patterns = {row.tobytes() for row in kept}
    assert len(patterns) == 16  # no two images, in the same or other sub-batches, share a mask


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_fused_pooling_in_sub_batches_trains_like_separate_ops(data_format, monkeypatch):
    """The fused pool + dropout reads its input from a buffer all sub-batches share; the
    separate ops keep one slice per sub-batch. Same masks, so the same training."""
    from kiln.graph import rules
    from kiln.ops import MaxPoolDropoutOp

    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 4 * 12 * 12 * 16 * 4)
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 2)
    x, y = data(data_format)
    models = []
    for fused in (True, False):
        model = small_model(data_format, dropout=True)
        model.build()
        if not fused:
            model._plan_rules = rules.without("max pool + dropout")
        assert any(isinstance(op, MaxPoolDropoutOp) for op in model.ops) == fused
        models.append(model)
    models[1].set_weights(models[0].get_weights())
    losses = [m.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
              for m in models]
    assert all(m._plan(True, 16).sub_batch == 4 for m in models)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-6)
    for a, b in zip(models[0].get_weights(), models[1].get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_sub_batch_gradients_kept_in_another_layout_add_up(monkeypatch):
    """A conv whose backward-weights writes another layout than the stored gradient: each
    sub-batch's part is reordered, then all are summed."""

    def build():
        keras.backend.clear_session()
        keras.initializers.set_random_seed(8)
        model = keras.Sequential([Conv2D(8, 3, activation="relu", input_shape=(12, 12, 1)),
                                  Conv2D(8, 3), Flatten(), Dense(3, activation="softmax")])
        model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.1))
        # keep the second kernel in its plain Keras layout, so backward-weights (which writes
        # a blocked one on every CPU) needs the reorder whatever layouts this CPU prefers
        model._sync()
        name = f"{model.layers[1].name}/kernel"
        model.store.value_memory(name, model.store.parameters[name].user_desc)
        return model

    rng = np.random.default_rng(4)
    x = rng.normal(size=(32, 12, 12, 1)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]
    whole = build()
    whole.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 4 * 8 * 10 * 10 * 4)
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 2)
    sliced = build()
    sliced.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    plan = sliced._plan(True, 16)
    assert plan.sub_batch == 4
    assert plan.describe().count("conv2d_1/kernel gradient to layout") == 4
    for a, b in zip(sliced.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)


FRONTS = {
    "tanh conv, max pooling": lambda df: [
        Conv2D(16, 3, activation="tanh", input_shape=shape_of(df), data_format=df),
        MaxPooling2D(data_format=df)],
    "linear conv, average pooling": lambda df: [
        Conv2D(16, 3, input_shape=shape_of(df), data_format=df),
        keras.layers.AveragePooling2D(data_format=df)],
    "strided relu conv, sigmoid conv": lambda df: [
        Conv2D(16, 3, strides=2, activation="relu", input_shape=shape_of(df), data_format=df),
        Conv2D(16, 3, activation="sigmoid", padding="same", data_format=df)],
}


def shape_of(data_format):
    return (12, 12, 2) if data_format == "channels_last" else (2, 12, 12)


@pytest.mark.parametrize("front", sorted(FRONTS))
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_other_fronts_in_sub_batches_train_like_whole_batches(front, data_format, monkeypatch):
    def build():
        keras.backend.clear_session()
        keras.initializers.set_random_seed(6)
        model = keras.Sequential(FRONTS[front](data_format) + [
            Flatten(data_format=data_format), Dense(4, activation="softmax")])
        model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(0.01))
        return model

    x, y = data(data_format)
    whole = build()
    whole.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    whole_predictions = whole.predict(x, batch_size=16)  # before build()'s clear_session
    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 1)  # as small as allowed: MIN_IMAGES
    monkeypatch.setattr(sub_batches, "MIN_IMAGES", 4)
    sliced = build()
    sliced.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert sliced._plan(True, 16).sub_batch == 0  # a budget of 1 byte fits no sub-batch
    sliced = build()
    sliced.build()
    _, largest = sub_batches.front(sliced.ops, logical_dims((16, *shape_of(data_format)),
                                                           data_format), 4)
    monkeypatch.setattr(sub_batches, "BUDGET_BYTES", 4 * largest)
    sliced.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert sliced._plan(True, 16).sub_batch == 4
    for a, b in zip(sliced.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(a, b, rtol=5e-4, atol=5e-6)
    np.testing.assert_allclose(sliced.predict(x, batch_size=16), whole_predictions,
                               rtol=1e-4, atol=1e-6)
