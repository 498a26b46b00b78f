"""Model inputs of integers (`keras.Input(shape, dtype="int32" / "int64")`): the plan holds
them as int32, a float layer reading one gets it cast (as Keras casts to the layer's compute
dtype), and float data fed to an integer input is truncated as Keras's cast to the input's
dtype does."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402


def dense_on_ints(dtype):
    def build(K):
        inputs = K.Input((5,), dtype=dtype)
        hidden = K.layers.Dense(4, activation="relu")(inputs)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(hidden))

    return build


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_dense_reads_an_integer_input_as_keras(dtype):
    ids = np.random.default_rng(0).integers(-3, 9, (6, 5)).astype(dtype)
    kiln_model, _ = check_against_keras(dense_on_ints(dtype), inputs=ids,
                                        optimizers=("sgd",))
    assert kiln_model.inputs[0].dtype == dtype
    assert kiln_model.get_config()["layers"][0]["config"]["dtype"] == dtype


def test_float_data_fed_to_an_integer_input_is_truncated_as_keras():
    keras = real_keras()
    kiln_model, keras_model = dense_on_ints("int32")(kk), dense_on_ints("int32")(keras)
    keras_model.set_weights(kiln_model.get_weights())
    x = np.random.default_rng(1).uniform(-4, 4, (7, 5)).astype(np.float32)
    np.testing.assert_allclose(kiln_model.predict(x), keras_model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kiln_model.predict(x), kiln_model.predict(np.trunc(x)),
                               rtol=1e-6)


def test_train_on_batch_and_evaluate_with_integer_inputs():
    keras = real_keras()
    kiln_model, keras_model = dense_on_ints("int64")(kk), dense_on_ints("int64")(keras)
    keras_model.set_weights(kiln_model.get_weights())
    x = np.random.default_rng(2).integers(0, 4, (8, 5))
    y = np.eye(3, dtype=np.float32)[np.arange(8) % 3]
    for model in (kiln_model, keras_model):
        model.compile(optimizer="sgd", loss="categorical_crossentropy")
    for _ in range(2):
        assert kiln_model.train_on_batch(x, y) == pytest.approx(
            float(keras_model.train_on_batch(x, y)), rel=1e-5)
    assert kiln_model.evaluate(x, y, verbose=0) == pytest.approx(
        keras_model.evaluate(x, y, verbose=0), rel=1e-5)


def test_integer_input_survives_a_config_round_trip():
    model = dense_on_ints("int32")(kk)
    clone = kk.Model.from_config(model.get_config())
    assert clone.inputs[0].dtype == "int32"


def test_an_unsupported_input_dtype_is_an_error_naming_the_argument():
    with pytest.raises(ValueError, match="argument dtype must be one of"):
        kk.Input((3,), dtype="float16")
