"""`input_shape` / `output_shape` of models and `input` / `output` of layers, as real Keras 3
has them: Functional and Sequential models give tuples with a None batch (a list for several
inputs or outputs), a subclassed model and every layer have no such attribute (Keras 3 layers
offer `.input` / `.output`), and an unbuilt Sequential model raises AttributeError."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
import keras_oracle  # noqa: E402  (sets KERAS_BACKEND before Keras is imported)

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def outcome(function):
    """What `function()` gives: ("value", it) or ("raises", the exception class)."""
    try:
        return ("value", function())
    except Exception as error:  # noqa: BLE001 (the class is what is compared)
        return ("raises", type(error).__name__)


def probes(K):
    """name -> outcome of one attribute read, on models and layers made with `K`."""
    L = K.layers
    a, b = K.Input((5,)), K.Input((4, 3))
    dense = L.Dense(2)
    first, second = dense(a), L.Dense(3)(L.Flatten()(b))
    one = K.Model(a, first)
    several = K.Model([a, b], [first, second])
    in_lists = K.Model([a], [first])
    unbuilt = K.Sequential([L.Dense(4), L.Dense(2)])
    built = K.Sequential([L.Dense(4), L.Dense(2)])
    built.build((None, 3))
    with_shape = K.Sequential([L.Dense(4, input_shape=(6,)), L.Dense(2)])

    class Net(K.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(2)

        def call(self, x):
            return self.dense(x)

    net = Net()
    net.build((None, 3))
    fresh = L.Dense(3)
    result = {}
    for name, model in (("one", one), ("several", several), ("in_lists", in_lists),
                        ("unbuilt", unbuilt), ("built", built), ("with_shape", with_shape),
                        ("subclassed", net)):
        for attribute in ("input_shape", "output_shape"):
            result[f"{name}.{attribute}"] = outcome(lambda m=model, a=attribute: getattr(m, a))
    for name, layer in (("dense", dense), ("fresh", fresh), ("input_layer", one.layers[0]),
                        ("in_sequential", with_shape.layers[0])):
        for attribute in ("input_shape", "output_shape"):
            result[f"{name}.{attribute}"] = outcome(lambda x=layer, a=attribute: getattr(x, a))
        for attribute in ("input", "output"):
            result[f"{name}.{attribute}.shape"] = outcome(
                lambda x=layer, a=attribute: tuple(getattr(x, a).shape))
    result["one.compute_output_shape"] = outcome(lambda: one.compute_output_shape((None, 5)))
    return result


def test_shapes_and_errors_as_keras():
    keras = keras_oracle.real_keras()
    ours, theirs = probes(kk), probes(keras)
    assert ours.keys() == theirs.keys()
    differ = {key: (ours[key], theirs[key]) for key in ours if ours[key] != theirs[key]}
    assert not differ, f"kiln vs Keras: {differ}"
    # and the values the issue asked for
    assert ours["one.output_shape"] == ("value", (None, 2))
    assert ours["several.input_shape"] == ("value", [(None, 5), (None, 4, 3)])
    assert ours["unbuilt.input_shape"] == ("raises", "AttributeError")
    assert ours["dense.output_shape"] == ("raises", "AttributeError")
