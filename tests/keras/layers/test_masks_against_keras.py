"""Keras masks against real Keras 3 (JAX backend): Embedding(mask_zero=True) and Masking
compute a (batch, steps) mask in the step, Dense / Dropout / Activation pass it on, a layer
whose call() takes `mask=` receives it (a masked mean over the steps, written with keras.ops
as a user would), a layer that does not support masking drops it; predictions and training
steps from the same weights."""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

PADDED = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [1, 1, 1, 1, 1], [2, 0, 0, 0, 0],
                   [9, 8, 7, 6, 0], [3, 0, 0, 0, 0]], dtype=np.int32)


def masked_mean(K):
    """A mean over the steps the mask keeps, as a user writes it against Keras 3."""

    class MaskedMean(K.layers.Layer):
        def call(self, inputs, mask=None):
            weights = K.ops.expand_dims(K.ops.cast(mask, "float32"), -1)
            return K.ops.sum(inputs * weights, axis=1) / K.ops.sum(weights, axis=1)

    return MaskedMean(name="masked_mean")


def embedding_masked_mean(K):
    inputs = K.Input((5,), dtype="int32")
    x = K.layers.Embedding(10, 4, mask_zero=True)(inputs)
    x = K.layers.Dense(6, activation="tanh")(x)
    x = K.layers.Dropout(0.0)(x)
    x = K.layers.Activation("relu")(x)
    x = masked_mean(K)(x)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))


def masking_masked_mean(K):
    inputs = K.Input((5, 3))
    x = K.layers.Masking(mask_value=0.0)(inputs)
    x = K.layers.Dense(4, activation="relu")(x)
    x = masked_mean(K)(x)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))


@pytest.fixture(autouse=True)
def keras_mask_warnings():
    with warnings.catch_warnings():  # Keras warns that MaskedMean ends the mask
        warnings.filterwarnings("ignore", message=".*does not support masking")
        yield


def test_embedding_mask_zero_reaches_a_masked_mean_through_dense_dropout_activation():
    kiln_model, keras_model = check_against_keras(embedding_masked_mean, inputs=PADDED,
                                                  optimizers=("sgd", "adam"))
    # the padding does not move the result: the mean is over the real steps only
    longer = np.concatenate([PADDED, np.zeros((6, 3), np.int32)], axis=1)[:, :5]
    np.testing.assert_array_equal(kiln_model.predict(longer), kiln_model.predict(PADDED))


def padded_sequences(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((6, 5, 3)).astype(np.float32)
    x[0, 3:] = 0.0
    x[1, 1:] = 0.0
    x[3, 2] = 0.0  # a masked step inside the sequence
    x[4, 0, 1] = 0.0  # one zero feature does not mask its step
    return x


def test_masking_zeroes_the_masked_steps_and_masks_them_for_the_layers_after_it():
    check_against_keras(masking_masked_mean, inputs=padded_sequences(),
                        optimizers=("sgd", "adam"))


@pytest.mark.parametrize("mask_value", [0.0, -1.5])
def test_masking_output_and_gradient_as_keras(mask_value):
    def build(K):
        inputs = K.Input((5, 3))
        x = K.layers.Dense(3)(inputs)  # learns: Masking's gradient reaches it
        x = K.layers.Masking(mask_value=mask_value)(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(2, activation="softmax")(x))

    def data():
        x = padded_sequences(1)
        return x

    kiln_model, _ = check_against_keras(build, inputs=data(), optimizers=("sgd",))
    layer = kk.layers.Masking(mask_value=mask_value)
    assert layer.get_config() == real_keras().layers.Masking(
        mask_value=mask_value, name=layer.name).get_config()


def test_masks_are_plan_tensors_with_the_keras_shape():
    model = embedding_masked_mean(kk)
    embedding = model.layers[1]
    mask = embedding.output._keras_mask
    assert mask.shape == (None, 5)
    for layer in model.layers[2:5]:  # Dense, Dropout, Activation pass it on
        assert layer.output._keras_mask is not None
    assert getattr(model.layers[5].output, "_keras_mask", None) is None  # masked mean ends it
    flat = kk.layers.Flatten()(embedding.output)
    assert flat._keras_mask is None  # Flatten does not support masking, as in Keras
    assert kk.layers.Embedding(10, 4)(kk.Input((5,), dtype="int32"))._keras_mask is None


def test_a_model_with_masks_round_trips_through_its_config_and_files(tmp_path):
    keras = real_keras()
    model = embedding_masked_mean(kk)
    expected = model.predict(PADDED)
    model.save(tmp_path / "masked.keras")
    custom = {"MaskedMean": type(model.layers[5])}
    loaded = kk.models.load_model(tmp_path / "masked.keras", custom_objects=custom)
    np.testing.assert_array_equal(loaded.predict(PADDED), expected)
    assert loaded.layers[1].output._keras_mask is not None
    keras_custom = {"MaskedMean": type(masked_mean(keras))}
    by_keras = keras.models.load_model(tmp_path / "masked.keras", custom_objects=keras_custom)
    np.testing.assert_allclose(by_keras.predict(PADDED, verbose=0), expected, rtol=1e-5,
                               atol=1e-6)


def test_masking_refuses_a_bad_mask_value_naming_the_layer():
    with pytest.raises(ValueError, match="Masking 'm': argument mask_value must be a number"):
        kk.layers.Masking(mask_value="zero", name="m")


class MaskedAveragePooling(kk.layers.Layer):
    """What GlobalAveragePooling1D's call does with a mask, on MaskedStepMeanOp (the layer
    itself lives with the other 1D layers)."""

    def call(self, inputs, mask=None):
        from kiln.graph.symbolic import apply
        from kiln.ops.masks import MaskedStepMeanOp

        return apply(MaskedStepMeanOp(self.name), [inputs, mask])


def test_masked_step_mean_is_keras_global_average_pooling_1d_with_a_mask():
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=True)(inputs)
        x = K.layers.Dense(6, activation="tanh")(x)
        pool = (MaskedAveragePooling(name="pool") if K is kk
                else K.layers.GlobalAveragePooling1D(name="pool"))
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(pool(x)))

    check_against_keras(build, inputs=PADDED, optimizers=("sgd", "adam"), compare_types=False)


@pytest.mark.parametrize("merge, both_masked", [
    ("Add", True), ("Average", True), ("Subtract", True), ("Concatenate", True)])
def test_merges_combine_their_inputs_masks_as_keras(merge, both_masked):
    """Keras 3 keeps a step where any mask keeps it."""
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        shifted = K.Input((5,), dtype="int32")
        a = K.layers.Embedding(10, 4, mask_zero=True)(inputs)
        b = K.layers.Embedding(10, 4, mask_zero=both_masked)(shifted)
        x = getattr(K.layers, merge)()([a, b])
        x = masked_mean(K)(K.layers.Dense(3, activation="relu")(x))
        return K.Model([inputs, shifted], K.layers.Dense(2, activation="softmax")(x))

    other = np.roll(PADDED, 1, axis=1)
    check_against_keras(build, inputs=[PADDED, other], optimizers=("sgd",))


def test_a_merge_of_a_masked_and_an_unmasked_tensor_has_no_mask_as_keras():
    inputs = kk.Input((5,), dtype="int32")
    masked = kk.layers.Embedding(10, 4, mask_zero=True)(inputs)
    unmasked = kk.layers.Embedding(10, 4)(inputs)
    assert kk.layers.Add()([masked, unmasked])._keras_mask is None
    assert kk.layers.Add()([masked, masked])._keras_mask is not None


def test_concatenate_of_a_masked_and_an_unmasked_tensor_keeps_every_step_as_keras():
    inputs = kk.Input((5,), dtype="int32")
    masked = kk.layers.Embedding(10, 4, mask_zero=True)(inputs)
    unmasked = kk.layers.Embedding(10, 4)(inputs)
    joined = kk.layers.Concatenate()([masked, unmasked])
    model = kk.Model(inputs, kk.layers.Dense(2)(joined._keras_mask))
    kernel = model.layers[-1].get_weights()[0]
    expected = np.ones((len(PADDED), 5), np.float32) @ kernel
    np.testing.assert_allclose(model.predict(PADDED), expected, rtol=1e-6)


@pytest.mark.parametrize("merge", ["Multiply", "Maximum", "Minimum"])
def test_merges_that_mask_values_refuse_masked_inputs_naming_the_layer(merge):
    inputs = kk.Input((5,), dtype="int32")
    masked = kk.layers.Embedding(10, 4, mask_zero=True)(inputs)
    with pytest.raises(ValueError, match=f"{merge} 'm': inputs with a mask"):
        getattr(kk.layers, merge)(name="m")([masked, masked])


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_global_average_pooling_1d_averages_the_kept_steps_as_keras(data_format):
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=True)(inputs)
        x = K.layers.Dense(6, activation="tanh")(x)
        if data_format == "channels_first":  # the mask given explicitly to the pooling
            mask = K.layers.Embedding(10, 4, mask_zero=True)(inputs)._keras_mask
            x = K.layers.Permute((2, 1))(x)
            x = K.layers.GlobalAveragePooling1D(data_format=data_format)(x, mask=mask)
        else:
            x = K.layers.GlobalAveragePooling1D()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, inputs=PADDED, optimizers=("sgd", "adam"))
