"""train_on_batch, test_on_batch and predict_on_batch name themselves in their errors (they
run through fit's / evaluate's / predict's machinery, whose names they used to give)."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import Dense

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

X = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
IDS = np.arange(8) % 3
BAD_IDS = np.where(np.arange(8) == 7, 3, IDS)
NAN_X = np.where(np.arange(32).reshape(8, 4) == 5, np.nan, X)
OUT_OF_RANGE = (r"argument y for loss 'sparse_categorical_crossentropy' on output 'out': "
                r"sample 7 of the batch has class id 3\.0, expected an integer in \[0, 3\)")

CASES = {
    "train_on_batch class id": (lambda m: m.train_on_batch(X, BAD_IDS),
                                rf"^train_on_batch: {OUT_OF_RANGE}"),
    "train_on_batch no labels": (lambda m: m.train_on_batch(X),
                                 r"^train_on_batch: argument y is required"),
    "train_on_batch NaN": (lambda m: m.train_on_batch(NAN_X, IDS),
                           r"^train_on_batch: argument x holds nan at index \(1, 1\)"),
    "test_on_batch class id": (lambda m: m.test_on_batch(X, BAD_IDS),
                               rf"^test_on_batch: {OUT_OF_RANGE}"),
    "predict_on_batch NaN": (lambda m: m.predict_on_batch(NAN_X),
                             r"^predict_on_batch: argument x holds nan"),
}


@pytest.mark.parametrize("case", CASES)
def test_error_names_the_batch_method(case):
    call, message = CASES[case]
    model = keras.Sequential([Dense(3, activation="softmax", input_shape=(4,), name="out")])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="sgd")
    before = model.get_weights()
    with pytest.raises(ValueError, match=message):
        call(model)
    for start, now in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(now, start)
