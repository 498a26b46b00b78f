"""Inputs with None axes (`keras.Input((None,))`, `Input((None, None, 3))`, `Input((None, 8, 8,
1))`): a plan per concrete input shape in the model's bounded PlanCache, the same predictions
and training steps as Keras 3 from the same weights, None shown where Keras shows it, and a
clear refusal where a layer's weights would depend on a None axis."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import ATOL, RTOL, _build, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.plan.plan_cache import cache_size  # noqa: E402


def pair(build):
    """(kiln model, Keras model) from `build(K)`, Keras holding kiln's initial weights."""
    keras = real_keras()
    ours = _build(kk, build, seed=0)
    theirs = _build(keras, build, seed=0)
    theirs.set_weights(ours.get_weights())
    return keras, ours, theirs


def assert_same(ours, theirs, x):
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)


def assert_same_weights(ours, theirs):
    for got, expected in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def token_batches(lengths, seed=1, count=4, classes=3):
    """(ids, one-hot labels) batches of these lengths, some steps padded with 0 (masked)."""
    rng = np.random.default_rng(seed)
    batches = []
    for length in lengths:
        ids = rng.integers(1, 20, (count, length)).astype(np.int32)
        ids[1, -2:] = 0
        labels = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, count)]
        batches.append((ids, labels))
    return batches


def recurrent_model(rnn):
    def build(K):
        tokens = K.Input((None,), dtype="int32")
        x = K.layers.Embedding(20, 8, mask_zero=True)(tokens)
        x = getattr(K.layers, rnn)(6)(x)
        return K.Model(tokens, K.layers.Dense(3, activation="softmax")(x))
    return build


def test_sequences_of_any_length_train_and_predict_as_keras():
    keras, ours, theirs = pair(recurrent_model("LSTM"))
    for ids, _ in token_batches((7, 12), seed=0):  # masked steps at the end of one sample
        assert_same(ours, theirs, ids)
    batches = token_batches((7, 12, 7))  # two lengths: one XLA compile each for Keras
    for K, model in ((kk, ours), (keras, theirs)):
        model.compile(optimizer=K.optimizers.SGD(0.1), loss="categorical_crossentropy")
    for model in (ours, theirs):  # a generator
        model.fit((batch for batch in batches), steps_per_epoch=3, epochs=1, shuffle=False,
                  verbose=0)
    assert_same_weights(ours, theirs)
    assert ours.output_shape == (None, 3) and ours.input_shape == (None, None)


def test_py_dataset_batches_of_different_lengths():
    class Lengths(kk.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, index):
            return token_batches((7, 12, 5))[index]

    model = _build(kk, recurrent_model("GRU"), seed=0)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    history = model.fit(Lengths(), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    lengths = {key[2] for key in model._plans if key[0] is True}
    assert lengths == {((7,),), ((12,),), ((5,),)}


def test_per_step_accuracy_over_batches_of_different_lengths_as_keras():
    """Keras averages a metric over each sample's steps before adding samples up, so a step
    of a longer batch counts less: evaluate's masked per-step accuracy must agree."""
    def build(K):
        tokens = K.Input((None,), dtype="int32")
        x = K.layers.Embedding(20, 8, mask_zero=True)(tokens)
        x = K.layers.GRU(6, return_sequences=True)(x)
        return K.Model(tokens, K.layers.Dense(4, activation="softmax")(x))

    _, ours, theirs = pair(build)
    rng = np.random.default_rng(0)
    batches = []
    for length in (7, 12, 5):
        ids = rng.integers(1, 20, (3, length)).astype(np.int32)
        ids[0, -2:] = 0
        batches.append((ids, rng.integers(0, 4, (3, length))))
    results = []
    for model in (ours, theirs):
        model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        results.append(model.evaluate((batch for batch in batches), steps=3, verbose=0))
    np.testing.assert_allclose(results[0], results[1], rtol=RTOL, atol=ATOL)


def conv1d_model(K):
    steps = K.Input((None, 4))
    x = K.layers.Conv1D(5, 3, padding="same", activation="relu")(steps)
    x = K.layers.GlobalMaxPooling1D()(x)
    return K.Model(steps, K.layers.Dense(3, activation="softmax")(x))


def conv2d_model(K):
    images = K.Input((None, None, 3))
    x = K.layers.Conv2D(4, 3, padding="same", activation="relu")(images)
    x = K.layers.MaxPooling2D()(x)
    x = K.layers.Conv2D(5, 3)(x)
    x = K.layers.GlobalAveragePooling2D()(x)
    return K.Model(images, K.layers.Dense(3, activation="softmax")(x))


@pytest.mark.parametrize("build, sizes", [(conv1d_model, [(9, 4), (14, 4)]),
                                          (conv2d_model, [(16, 16, 3), (24, 20, 3)])])
def test_any_size_convolutions_predict_and_train_as_keras(build, sizes):
    keras, ours, theirs = pair(build)
    rng = np.random.default_rng(0)
    for size in sizes:
        assert_same(ours, theirs, rng.standard_normal((2, *size)).astype(np.float32))
    for K, model in ((kk, ours), (keras, theirs)):
        model.compile(optimizer=K.optimizers.SGD(0.1), loss="categorical_crossentropy")
    labels = np.eye(3, dtype=np.float32)[[0, 2]]
    for size in sizes:  # a training step on each size
        x = rng.standard_normal((2, *size)).astype(np.float32)
        np.testing.assert_allclose(ours.train_on_batch(x, labels),
                                   theirs.train_on_batch(x, labels), rtol=RTOL, atol=ATOL)
    assert_same_weights(ours, theirs)
    assert ours.output_shape == theirs.output_shape == (None, 3)
    assert ours.input_shape == theirs.input_shape


def test_time_distributed_convolution_over_clips_of_any_length():
    def build(K):
        clips = K.Input((None, 8, 8, 1))
        x = K.layers.TimeDistributed(K.layers.Conv2D(2, 3, activation="relu"))(clips)
        x = K.layers.TimeDistributed(K.layers.GlobalAveragePooling2D())(x)
        x = K.layers.GRU(4)(x)
        return K.Model(clips, K.layers.Dense(2)(x))

    _, ours, theirs = pair(build)
    rng = np.random.default_rng(0)
    for steps in (3, 5):
        assert_same(ours, theirs, rng.standard_normal((2, steps, 8, 8, 1)).astype(np.float32))
    assert [layer._first_output_shape for layer in ours.layers[1:3]] == [
        (None, None, 6, 6, 2), (None, None, 2)]


def test_many_lengths_keep_at_most_cache_size_plans():
    model = _build(kk, conv1d_model, seed=0)
    for steps in range(3, 3 + cache_size() + 4):
        model.predict(np.ones((2, steps, 4), np.float32), verbose=0)
        assert len(model._plans) <= cache_size()
    assert len(model._plans) == cache_size()


def test_summary_config_and_saving_keep_none(tmp_path):
    keras, ours, theirs = pair(conv2d_model)
    lines = []
    ours.summary(print_fn=lines.append)
    assert any("(None, None, None, 4)" in line for line in lines)
    config = ours.get_config()
    assert config["layers"][0]["config"]["batch_shape"] == (None, None, None, 3)
    assert config["layers"][1]["build_config"]["input_shape"] == [None, None, None, 3]
    ours.save(tmp_path / "model.keras")
    x = np.random.default_rng(0).standard_normal((2, 10, 12, 3)).astype(np.float32)
    for loaded in (kk.models.load_model(tmp_path / "model.keras"),
                   keras.models.load_model(tmp_path / "model.keras")):
        assert loaded.input_shape == (None, None, None, 3)
        np.testing.assert_allclose(loaded.predict(x, verbose=0), ours.predict(x, verbose=0),
                                   rtol=RTOL, atol=ATOL)


def test_sequential_and_subclassed_models_with_none_axes():
    sequential = kk.Sequential([kk.Input((None, 4)), kk.layers.Conv1D(3, 3, padding="same"),
                                kk.layers.GlobalAveragePooling1D()])
    assert sequential.output_shape == (None, 3)
    assert sequential.predict(np.ones((2, 6, 4), np.float32), verbose=0).shape == (2, 3)

    class Net(kk.Model):
        def __init__(self):
            super().__init__()
            self.conv = kk.layers.Conv1D(3, 3, padding="same")
            self.pool = kk.layers.GlobalMaxPooling1D()

        def call(self, inputs):
            return self.pool(self.conv(inputs))

    net = Net()
    net.build((None, None, 4))
    for steps in (5, 9):
        x = np.random.default_rng(steps).standard_normal((2, steps, 4)).astype(np.float32)
        np.testing.assert_allclose(net.predict(x, verbose=0),
                                   sequential_like(net, x), rtol=1e-5, atol=1e-6)


def sequential_like(net, x):
    """The subclassed Net's output computed by a fixed-shape model with its weights."""
    inputs = kk.Input(x.shape[1:])
    model = kk.Model(inputs, net.pool(net.conv(inputs)))
    return model.predict(x, verbose=0)


def test_weights_depending_on_a_none_axis_are_refused():
    inputs = kk.Input((None, 4))
    flat = kk.layers.Flatten()(inputs)
    dense = kk.layers.Dense(2, name="head")
    outputs = dense(flat)
    with pytest.raises(ValueError, match=r"Dense 'head': its weights depend on the size of "
                                         r"input axis 1, which is None .* \(None, None\)"):
        kk.Model(inputs, outputs)
    with pytest.raises(ValueError, match="Dense 'last'.* input axis 1"):
        kk.Sequential([kk.Input((None,)), kk.layers.Dense(2, name="last")])


def test_a_wrong_fixed_axis_is_still_refused():
    model = _build(kk, conv1d_model, seed=0)
    with pytest.raises(ValueError, match=r"Conv1D 'conv1d': argument x must have shape "
                                         r"\(batch, any, 4\).* got \(2, 5, 3\)"):
        model.predict(np.ones((2, 5, 3), np.float32), verbose=0)
    with pytest.raises(ValueError, match="must be positive ints or None"):
        kk.Input((None, 0))
    steps = kk.Input((None, 4))
    short = kk.Model(steps, kk.layers.GlobalMaxPooling1D()(kk.layers.Conv1D(3, 5)(steps)))
    with pytest.raises(ValueError, match=r"a batch of input shape \(3, 4\) .* smaller than "
                                         r"kernel_size"):
        short.predict(np.ones((2, 3, 4), np.float32), verbose=0)


def test_nested_and_two_input_models():
    steps = kk.Input((None, 4))
    inner = kk.Model(steps, kk.layers.Conv1D(3, 3, padding="same")(steps))
    outer_input = kk.Input((None, 4))
    outer = kk.Model(outer_input, kk.layers.GlobalAveragePooling1D()(inner(outer_input)))
    fixed_input = kk.Input((7, 4))  # a fixed-shape model may call it too
    fixed = kk.Model(fixed_input, kk.layers.GlobalAveragePooling1D()(inner(fixed_input)))
    x = np.random.default_rng(0).standard_normal((2, 7, 4)).astype(np.float32)
    np.testing.assert_allclose(outer.predict(x, verbose=0), fixed.predict(x, verbose=0),
                               rtol=1e-6)
    assert outer.predict(x[:, :5], verbose=0).shape == (2, 3)
    assert fixed._variable_shapes is None and len(inner.layers[1]._inbound_nodes) == 3

    sequence, extra = kk.Input((None, 4)), kk.Input((2,))
    pooled = kk.layers.GlobalMaxPooling1D()(kk.layers.Conv1D(3, 3, padding="same")(sequence))
    model = kk.Model([sequence, extra], kk.layers.Concatenate()([pooled, extra]))
    model.compile(loss="mse", optimizer="sgd")
    for length in (5, 8):
        inputs = [np.ones((2, length, 4), np.float32), np.ones((2, 2), np.float32)]
        assert np.isfinite(model.train_on_batch(inputs, np.zeros((2, 5), np.float32)))
    assert {key[2] for key in model._plans} == {((5, 4), (2,)), ((8, 4), (2,))}


def test_the_weight_check_leaves_the_random_generator_as_it_was():
    def weights_after(shape):
        kk.utils.set_random_seed(3)
        inputs = kk.Input(shape)
        kk.Model(inputs, kk.layers.Conv1D(3, 3, padding="same")(inputs))
        return kk.layers.Dense(2)(kk.Input((3,)))._keras_history[0].get_weights()

    for got, expected in zip(weights_after((None, 4)), weights_after((5, 4)), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_keras2_input_shape_and_a_saved_optimizer_state(tmp_path):
    model = kk.Sequential([kk.layers.LSTM(5, input_shape=(None, 3)), kk.layers.Dense(2)])
    model.compile(loss="mse", optimizer="adam")
    assert model.input_shape == (None, None, 3)
    rng = np.random.default_rng(0)
    for length in (4, 9):
        model.train_on_batch(rng.standard_normal((2, length, 3)).astype(np.float32),
                             np.zeros((2, 2), np.float32))
    model.save(tmp_path / "model.keras")
    loaded = kk.models.load_model(tmp_path / "model.keras")  # Adam's slots come back
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    y = np.ones((2, 2), np.float32)
    assert loaded.train_on_batch(x, y) == model.train_on_batch(x, y)
    for got, expected in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)
