"""The oracle checker (keras_oracle.py) fails when kiln and Keras differ, and kiln's errors for
graphs and layer arguments it cannot take name the tensor, the layer and the argument (real
Keras 3 with the JAX backend beside it where the two should agree)."""

import keras_oracle
import pytest
from keras_oracle import build_pair, check_against_keras, compare_structure
from test_keras_oracle_models import CL, sequential_cnn

from kiln import keras as kk

keras_real = pytest.importorskip("keras")  # keras_oracle chose the JAX backend

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


# -- the checker itself -----------------------------------------------------------------------
def differs(kiln_value, keras_value):
    """A value that is `kiln_value` when building with kiln.keras, `keras_value` with Keras."""
    return lambda K: kiln_value if K is kk else keras_value


@pytest.mark.parametrize("units,activation,name,pattern", [
    (differs(4, 5), lambda K: "softmax", lambda K: "out", r"weights differ"),
    (lambda K: 4, differs("softmax", "relu"), lambda K: "out", r"predict"),
    (lambda K: 4, lambda K: "softmax", differs("out", "head"), r"model.layers differ"),
], ids=["shape", "activation", "name"])
def test_checker_fails_on_a_different_model(units, activation, name, pattern):
    def build(K):
        return K.Sequential([K.Input((6,)), K.layers.Dense(5, activation="tanh"),
                             K.layers.Dense(units(K), activation=activation(K), name=name(K))])
    with pytest.raises(AssertionError, match=pattern):
        check_against_keras(build, train=False)


def test_checker_fails_on_a_different_training_step():
    def build(K):
        return K.Sequential([K.Input((6,)), K.layers.Dense(3, activation="softmax")])

    def momentum(K):  # the same first step (a plain SGD step): only the second one differs
        return K.optimizers.SGD(learning_rate=0.1, momentum=0.9 if K is kk else 0.8)
    with pytest.raises(AssertionError, match=r"after epoch 2: weight dense/kernel"):
        check_against_keras(build, optimizers=[momentum])


def test_checker_fails_when_only_one_side_is_frozen():
    def build(K):
        return K.Sequential([K.Input((6,)),
                             K.layers.Dense(3, activation="softmax", trainable=K is not kk)])
    with pytest.raises(AssertionError, match=r"model.trainable_weights differ"):
        build_pair(build)


def test_compare_structure_tolerates_only_the_scope_prefix_of_keras_paths():
    kiln_model, keras_model, _ = build_pair(sequential_cnn(CL))
    compare_structure(kiln_model, keras_model)
    assert keras_model.weights[0].path == "sequential/conv2d/kernel"
    assert kiln_model.weights[0].path == "conv2d/kernel"
    assert not keras_oracle._path_matches("conv2d/kernel", "sequential/xconv2d/kernel", False)


# -- errors -----------------------------------------------------------------------------------
def test_output_not_reachable_from_the_inputs_names_the_tensor():
    a, b = kk.Input((5,), name="in_a"), kk.Input((3,), name="in_b")
    unreachable = kk.layers.Dense(2, name="from_b")(b)
    with pytest.raises(ValueError, match=r"'from_b'.*'in_b'"):
        kk.Model(a, unreachable)
    with pytest.raises(ValueError, match=r"'in_b'"):
        kk.Model(a, [kk.layers.Dense(2)(a), unreachable])


def test_input_not_used_by_the_outputs_names_the_tensor():
    """An error in kiln (Keras 3.15 accepts such a model silently)."""
    a, b = kk.Input((5,), name="in_a"), kk.Input((3,), name="unused")
    with pytest.raises(ValueError, match=r"input 'unused'.*not used"):
        kk.Model([a, b], kk.layers.Dense(2)(a))


@pytest.mark.parametrize("make,pattern", [
    # a regularizer given as a Python function (L1 / L2 / L1L2 are planned into the step)
    (lambda L: L.Conv2D(2, 3, activity_regularizer=lambda x: 0.0, name="c"),
     r"Conv2D 'c'.*activity_regularizer"),
    (lambda L: L.Dense(3, kernel_regularizer=lambda w: 0.0, name="d"),
     r"Dense 'd'.*kernel_regularizer"),
    (lambda L: L.Dense(3, activation="sparse_plus", name="d"),
     r"Dense 'd'.*activation.*sparse_plus"),
    (lambda L: L.Dense(3, dtype="float16", name="d"), r"Dense 'd'.*dtype"),
    (lambda L: L.MaxPooling2D(2, dtype="float64", name="p"), r"MaxPooling2D 'p'.*dtype"),
    (lambda L: L.Activation("sparse_plus", name="a"), r"Activation 'a'.*activation.*sparse_plus"),
    (lambda L: L.Input((3,), sparse=True, name="i"), r"InputLayer 'i'.*sparse"),
])
def test_unsupported_layer_argument_names_layer_and_argument(make, pattern):
    with pytest.raises((TypeError, ValueError), match=pattern):
        make(kk.layers)
    make(keras_real.layers)  # Keras 3 accepts it


def test_unsupported_initializer_names_the_argument():
    with pytest.raises(ValueError, match=r"Conv2D 'c'.*kernel_initializer.*'stft'"):
        kk.layers.Conv2D(2, 3, kernel_initializer="stft", name="c")


def test_unsupported_input_dtype_names_the_input():
    with pytest.raises(ValueError, match=r"'input_layer(_\d+)?'.*argument dtype"):
        kk.Input((3,), dtype="float16")


@pytest.mark.parametrize("merge,where", [
    ("Add", ""), ("Subtract", ""), ("Average", ""), ("Minimum", ""),
    ("Concatenate", " except on the concatenation axis")])
def test_merge_shape_mismatch_names_both_producers_and_shapes(merge, where):
    """The message names the layer, both inputs' producing layers and their shapes (Keras 3
    refuses the same graphs, with a message naming neither producer)."""
    def graph(K):
        a = K.Input((6, 6, 2), name="image")
        left = K.layers.Conv2D(4, 3, name="narrow")(a)                  # (None, 4, 4, 4)
        right = K.layers.Conv2D(4, 3, padding="same", name="wide")(a)  # (None, 6, 6, 4)
        return getattr(K.layers, merge)(name="join"), [left, right]
    layer, inputs = graph(kk)
    pattern = (rf"{merge} 'join': inputs must have the same shape{where}, got "
               r"\(None, 4, 4, 4\) from 'narrow' and \(None, 6, 6, 4\) from 'wide'")
    with pytest.raises(ValueError, match=pattern):
        layer(inputs)
    layer, inputs = graph(keras_real)
    with pytest.raises(ValueError):
        layer(inputs)
