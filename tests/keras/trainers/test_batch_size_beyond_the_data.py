"""A batch_size larger than the data: Keras 3 runs one batch of every sample; kiln must stage
only that many rows (fit(batch_size=10**9) on 64 samples once asked for 238 GiB)."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import Dense
from kiln.runtime import feeder

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

HUGE = 10**9


@pytest.fixture
def staged_rows(monkeypatch):
    """The row counts of the staging buffers the feeder asks for (refusing absurd ones, so a
    regression fails here instead of allocating)."""
    rows = []
    allocate = feeder.aligned_array

    def recording(shape, dtype=np.float32):
        rows.append(shape[0])
        assert shape[0] <= 1024, f"staging buffer of {shape[0]} rows for 64 samples"
        return allocate(shape, dtype)

    monkeypatch.setattr(feeder, "aligned_array", recording)
    return rows


def model_and_data():
    model = keras.Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=keras.optimizers.SGD(learning_rate=0.1))
    rng = np.random.default_rng(0)
    return model, rng.normal(size=(64, 4)).astype(np.float32), rng.integers(0, 3, 64)


def test_fit_evaluate_predict_with_a_batch_size_beyond_the_sample_count(staged_rows):
    model, x, y = model_and_data()
    reference, _, _ = model_and_data()
    reference.set_weights(model.get_weights())
    history = model.fit(x, y, batch_size=HUGE, epochs=2, shuffle=False, verbose=0)
    expected = reference.fit(x, y, batch_size=64, epochs=2, shuffle=False, verbose=0)
    assert history.params["steps"] == 1  # as Keras: one batch of all 64 samples
    np.testing.assert_allclose(history.history["loss"], expected.history["loss"], rtol=1e-6)
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    assert model.evaluate(x, y, batch_size=HUGE, verbose=0) == pytest.approx(
        reference.evaluate(x, y, batch_size=64, verbose=0), rel=1e-6)
    np.testing.assert_array_equal(model.predict(x, batch_size=HUGE),
                                  reference.predict(x, batch_size=64))
    assert staged_rows and max(staged_rows) == 64
