"""The keras.ops a hand-written transformer block uses, traced inside a layer's call() into
the planned step: predictions and training steps equal to real Keras 3 (JAX) from the same
weights. Ops on constants (arange, linspace, a sinusoid of them, triangles of ones) are
constants of the plan; ops on tensors are engine ops with their backward. Bad arguments are
refused naming the op (or layer) and the argument."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def math_block(K):
    """sin, cos, erf, tanh, exp, log, round on a tensor; a sinusoidal position code made of
    arange / linspace / sin / cos / expand_dims on constants, added to it."""
    ops = K.ops

    class Math(K.layers.Layer):
        def call(self, x):
            steps, width = ops.shape(x)[1], ops.shape(x)[2]
            positions = ops.expand_dims(ops.arange(0, steps, 1), -1)
            rates = ops.linspace(0.1, 1.0, width)
            code = ops.sin(positions * rates) + ops.cos(positions * rates)
            y = ops.sin(x) + ops.cos(x) * 0.5 + ops.erf(x) - ops.tanh(x) * 0.25
            y = y + ops.exp(x * 0.1) + ops.log(ops.square(x) + 1.0)
            return y + ops.round(x * 2.0) * x + code

    inputs = K.Input((5, 4))
    x = K.layers.Dense(4, name="first")(inputs)
    x = Math(name="math")(x)
    x = K.layers.GlobalAveragePooling1D()(x)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(x))


def test_math_and_position_codes_in_a_layer_train_as_keras():
    check_against_keras(math_block, optimizers=("sgd",))


def shape_block(K):
    """cumsum, triu / tril (a causal mask over the last two axes), take, tile, repeat,
    expand_dims, argmax."""
    ops = K.ops

    class Shapes(K.layers.Layer):
        def call(self, x):  # x: (batch, 4, 4)
            y = ops.cumsum(x, axis=1) * 0.5 + ops.triu(x, 1) - ops.tril(x) * 0.5
            y = ops.take(y, [2, 0, 1, 3, 3], axis=2)  # (batch, 4, 5)
            y = ops.tile(y, (1, 2, 1))  # (batch, 8, 5)
            y = ops.repeat(y, 2, axis=2)  # (batch, 8, 10)
            index = ops.cast(ops.argmax(x, axis=-1), "float32")  # (batch, 4): no gradient
            weights = ops.expand_dims(ops.tile(index, (1, 2)), -1)  # (batch, 8, 1)
            return y * (weights + 1.0)

    inputs = K.Input((4, 3))
    x = K.layers.Dense(4, name="first")(inputs)
    x = Shapes(name="shapes")(x)
    x = K.layers.GlobalAveragePooling1D()(x)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(x))


def test_cumsum_triangles_take_tile_repeat_argmax_in_a_layer_train_as_keras():
    check_against_keras(shape_block, optimizers=("sgd",))


def test_take_with_repeated_and_negative_indices_and_a_2d_index_array():
    def build(K):
        class Gather(K.layers.Layer):
            def call(self, x):  # (batch, 6, 2) -> (batch, 2, 2, 2)
                return K.ops.take(x, [[5, -1], [0, 0]], axis=1)

        inputs = K.Input((6, 2))
        x = Gather(name="gather")(K.layers.Dense(2, name="first")(inputs))
        x = K.layers.Reshape((8,))(x)
        return K.Model(inputs, K.layers.Dense(2, activation="softmax", name="classes")(x))

    check_against_keras(build, optimizers=("sgd",), steps=1)


# -- refusals ----------------------------------------------------------------------------------
def traced(call, shape=(4, 3)):
    """Trace `call` inside a layer on an input of `shape` (the error comes from the trace)."""
    class Probe(kk.layers.Layer):
        def call(self, x):
            return call(x)

    inputs = kk.Input(shape)
    return kk.Model(inputs, Probe(name="probe")(inputs))


def test_bad_arguments_are_refused_by_name():
    ops = kk.ops
    with pytest.raises(IndexError, match="probe.*keras.ops.take argument indices has 7, out of "
                                         "range for axis 1 of size 4"):
        traced(lambda x: ops.take(x, [0, 7], axis=1))
    with pytest.raises(ValueError, match="keras.ops.triu argument x must have rank >= 2"):
        ops.triu(np.ones(3))
    with pytest.raises(NotImplementedError, match="probe.*keras.ops.tril.*include the batch"):
        traced(lambda x: ops.tril(x), shape=(3,))
    with pytest.raises(NotImplementedError, match="probe.*keras.ops.cumsum.*axis=None"):
        traced(lambda x: ops.cumsum(x))
    with pytest.raises(NotImplementedError, match="probe.*keras.ops.take.*along the batch"):
        traced(lambda x: ops.take(x, [0], axis=0))
    with pytest.raises(NotImplementedError, match="probe.*keras.ops.round.*decimals=1"):
        traced(lambda x: ops.round(x, 1))
    with pytest.raises(ValueError, match="keras.ops.repeat argument repeats"):
        traced(lambda x: ops.repeat(x, [1, -1, 2, 0], axis=1))


def test_embedding_on_constant_ids_inside_a_layer_refuses_what_it_cannot_plan():
    class Positions(kk.layers.Layer):
        def __init__(self, ids, **kwargs):
            super().__init__(**kwargs)
            self.ids = ids
            self.table = kk.layers.Embedding(5, 3, name="table")

        def call(self, x):
            return x + self.table(self.ids)

    with pytest.raises(ValueError, match="Embedding 'table'.*argument inputs holds ids outside "
                                         r"\[0, 5\)"):
        Positions(np.arange(6))(kk.Input((6, 3)))
    with pytest.raises(NotImplementedError, match="Embedding 'table'.*only all the table's rows"):
        Positions(np.arange(4))(kk.Input((4, 3)))
    with pytest.raises(TypeError, match="Embedding 'table'.*argument inputs must be a 1-D array"):
        Positions(np.zeros(5))(kk.Input((5, 3)))


def test_take_of_a_weight_by_token_ids_is_a_trained_embedding_as_keras():
    """A hand-written embedding layer: ops.take(self.table, ids) gathers rows of its weight
    (the engine's Embedding gather, its scatter-add backward trains the table)."""
    def build(K):
        class TokenEmbedding(K.layers.Layer):
            def build(self, input_shape):
                self.table = self.add_weight(shape=(9, 4), initializer="uniform", name="table")

            def call(self, ids):
                return K.ops.take(self.table, ids, axis=0)

        inputs = K.Input((5,), dtype="int32")
        x = TokenEmbedding(name="tokens")(inputs)
        x = K.layers.GlobalAveragePooling1D()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(x))

    ids = np.random.default_rng(1).integers(0, 9, (6, 5)).astype(np.int32)
    check_against_keras(build, inputs=ids, optimizers=("sgd",))
