"""Labels that do not fit the loss stop fit / evaluate with an error naming the argument, the
batch and the expected value, before that batch changes any weight; class ids given as arrays
are checked whole, before the first step."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import Dense

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def model_with(loss, units=3, activation="softmax"):
    model = keras.Sequential([Dense(units, activation=activation, input_shape=(4,),
                                    name="out")])
    model.compile(loss=loss, optimizer=keras.optimizers.SGD(learning_rate=0.5))
    return model


def data(n=8):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n)


def assert_refused(model, x, y, pattern, **kwargs):
    before = model.get_weights()
    with pytest.raises(ValueError, match=pattern):
        model.fit(x, y, verbose=0, shuffle=False, **kwargs)
    for start, now in zip(before, model.get_weights()):
        np.testing.assert_array_equal(now, start)


@pytest.mark.parametrize("bad", [3, -1, 1.5])
def test_a_bad_class_id_in_the_last_batch_stops_fit_before_the_first_step(bad):
    """numpy labels are checked whole up front: no batch trains before the bad one is met."""
    x, ids = data(64)
    ids = ids.astype(np.float32)
    ids[61] = bad  # in the last of 16 batches of 4
    assert_refused(model_with("sparse_categorical_crossentropy"), x, ids,
                   r"^fit: argument y for loss 'sparse_categorical_crossentropy' on output "
                   rf"'out': sample 61 has class id {float(bad)!r}, expected an integer in "
                   r"\[0, 3\)$", batch_size=4)


def test_a_bad_validation_class_id_stops_fit_before_the_first_step():
    x, ids = data()
    bad = ids.copy()
    bad[7] = 5
    assert_refused(model_with("sparse_categorical_crossentropy"), x, ids,
                   r"^fit \(validation data\): argument y for loss "
                   r"'sparse_categorical_crossentropy' on output 'out': sample 7 has class id "
                   r"5\.0, expected an integer in \[0, 3\)$", batch_size=4,
                   validation_data=(x, bad.reshape(-1, 1)))


def test_a_generator_is_checked_batch_by_batch():
    """A generator's batches are only known as they come: the bad batch trains nothing, the
    ones before it did (the weights are one step's)."""
    x, ids = data()
    ids = ids.astype(np.float32)
    ids[5] = 3
    model = model_with("sparse_categorical_crossentropy")
    reference = model_with("sparse_categorical_crossentropy")
    reference.set_weights(model.get_weights())
    with pytest.raises(ValueError, match=r"fit, epoch 1, batch 1: argument y for loss "
                       r"'sparse_categorical_crossentropy' on output 'out': sample 1 of the "
                       r"batch has class id 3\.0"):
        model.fit(((x[i:i + 4], ids[i:i + 4]) for i in (0, 4)), verbose=0)
    reference.fit(x[:4], ids[:4], batch_size=4, verbose=0, shuffle=False)
    for got, expected in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_one_hot_labels_given_to_a_sparse_loss():
    x, ids = data()
    assert_refused(model_with("sparse_categorical_crossentropy"), x, np.eye(3)[ids],
                   r"argument y .* must be class ids of shape \(8,\) or \(8, 1\), got shape "
                   r"\(8, 3\) \(one-hot labels: use categorical_crossentropy")


@pytest.mark.parametrize("shape", ["(N,)", "(N, 1)"])
def test_class_ids_given_to_a_categorical_loss(shape):
    x, ids = data()
    y = ids if shape == "(N,)" else ids.reshape(-1, 1)
    assert_refused(model_with("categorical_crossentropy"), x, y,
                   r"argument y for loss 'categorical_crossentropy' on output 'out' must have "
                   r"shape \(8, 3\) .* \(class ids: use sparse_categorical_crossentropy")


def test_wrong_label_width_for_a_regression_loss():
    x, _ = data()
    assert_refused(model_with("mse", units=2, activation=None), x, np.zeros((8, 3)),
                   r"argument y for loss 'mse' on output 'out' must have shape \(8, 2\) to "
                   r"match the output \(None, 2\), got \(8, 3\)")


def test_evaluate_checks_the_whole_of_y_first():
    x, ids = data()
    ids = ids.astype(np.float32)
    ids[6] = 7
    with pytest.raises(ValueError, match=r"^evaluate: argument y .*: sample 6 has class id 7\.0"):
        model_with("sparse_categorical_crossentropy").evaluate(x, ids, batch_size=4, verbose=0)


def test_a_loss_written_with_numpy_is_refused_at_compile():
    """A user's loss is traced at compile (keras.ops on symbolic tensors): numpy is named."""
    def my_loss(y_true, y_pred):
        return np.mean((y_true - y_pred) ** 2, axis=-1)
    model = keras.Sequential([Dense(2, input_shape=(4,))])
    with pytest.raises(TypeError, match=r"loss 'my_loss'.*keras\.ops"):
        model.compile(loss=my_loss, optimizer="sgd")
