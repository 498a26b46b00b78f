"""Sample weights reach the loss the same way whatever the data source: a generator yielding
(x, y, sample_weight) trains exactly as the arrays with sample_weight=, (N, 1) weights as (N,),
and a zero weight removes a sample from the loss and its gradient."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import Dense

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def make_model():
    model = keras.Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=keras.optimizers.SGD(learning_rate=0.3), metrics=["acc"])
    return model


def data():
    rng = np.random.default_rng(5)
    return (rng.normal(size=(12, 4)).astype(np.float32), rng.integers(0, 3, 12),
            rng.uniform(0, 2, 12).astype(np.float32))


def test_generator_with_weights_trains_as_arrays():
    x, y, w = data()
    arrays, generated = make_model(), make_model()
    generated.set_weights(arrays.get_weights())
    history = arrays.fit(x, y, sample_weight=w, batch_size=4, epochs=2, shuffle=False,
                         verbose=0).history

    def batches():
        while True:
            for start in range(0, 12, 4):
                yield x[start:start + 4], y[start:start + 4], w[start:start + 4]

    other = generated.fit(batches(), steps_per_epoch=3, epochs=2, verbose=0).history
    np.testing.assert_allclose(other["loss"], history["loss"], rtol=1e-6)
    for a, b in zip(arrays.get_weights(), generated.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_column_weights_and_zero_weights():
    x, y, w = data()
    first, second, third = make_model(), make_model(), make_model()
    second.set_weights(first.get_weights())
    third.set_weights(first.get_weights())
    first.fit(x, y, sample_weight=w, batch_size=12, verbose=0)
    second.fit(x, y, sample_weight=w.reshape(-1, 1), batch_size=12, verbose=0)
    for a, b in zip(first.get_weights(), second.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    # a zero weight on sample 0: changing its label changes nothing
    w[0] = 0.0
    y_other = y.copy()
    y_other[0] = (y[0] + 1) % 3
    fourth = make_model()
    fourth.set_weights(third.get_weights())
    loss_a = third.fit(x, y, sample_weight=w, batch_size=12, verbose=0).history["loss"]
    loss_b = fourth.fit(x, y_other, sample_weight=w, batch_size=12, verbose=0).history["loss"]
    assert loss_a == pytest.approx(loss_b, rel=1e-7)
    for a, b in zip(third.get_weights(), fourth.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
