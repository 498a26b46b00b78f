"""fit(validation_split=...) refuses what Keras 3 refuses, with Keras's words: Python lists
(Keras' tree walks them as structures of scalars) and a split that leaves a side empty."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from keras_oracle import real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

X = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32)


def model(K):
    inputs = K.Input((4,))
    built = K.Model(inputs, K.layers.Dense(2)(inputs))
    built.compile(optimizer="sgd", loss="mse")
    return built


def refusal(K, x, y, split):
    with pytest.raises(ValueError) as error:
        model(K).fit(x, y, validation_split=split, verbose=0)
    return str(error.value)


CASES = {
    "x and y as lists": (X.tolist(), Y.tolist(), 0.25),
    "y as a list": (X, Y.tolist(), 0.25),
    "too few samples": (X[:1], Y[:1], 0.5),
}


def test_refusals_say_what_keras_says():
    keras = real_keras()
    for case, (x, y, split) in CASES.items():
        theirs, ours = refusal(keras, x, y, split), refusal(kk, x, y, split)
        if case == "too few samples":
            assert ours == f"fit: {theirs}"
        else:
            # Keras lists the type of every number; kiln each type once, with a hint
            lead = theirs.split("Found")[0]
            assert ours.startswith(f"fit: {lead.rstrip('.')}. Found incompatible type in the "
                                   "input: [<class 'float'>"), (case, ours)
            assert ours.endswith("convert Python lists with np.asarray")


def test_a_list_of_arrays_splits_as_in_keras():
    keras = real_keras()
    histories = []
    for K in (kk, keras):
        built = model(K)
        built.set_weights([np.full(w.shape, 0.1, np.float32) for w in built.weights])
        histories.append(built.fit([X], [Y], validation_split=0.25, shuffle=False, epochs=2,
                                   batch_size=6, verbose=0).history)
    assert histories[0].keys() == histories[1].keys() == {"loss", "val_loss"}
    for name in histories[0]:
        np.testing.assert_allclose(histories[0][name], histories[1][name], rtol=1e-5)


def test_a_generator_is_refused_with_the_keras_message():
    batches = ((X, Y) for _ in range(2))
    with pytest.raises(ValueError, match=r"^fit: Argument `validation_split` is only supported "
                       r"for tensors or NumPy arrays\. Found incompatible type in the input: "
                       r"\[<class 'generator'>\]; give validation_data for a generator"):
        model(kk).fit(batches, validation_split=0.25, verbose=0)
