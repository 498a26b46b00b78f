"""keras.Variable eagerly against real Keras 3 (names, shapes, dtypes, seeded initial values,
assign), and Layer.add_variable (Keras 3's alias of add_weight, shape and initializer
first) in a custom layer compared with Keras by the layer checker."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras  # noqa: E402


def test_variable_from_values_and_initializers_as_keras():
    K = real_keras()
    cases = [
        ({"initializer": np.arange(6.0).reshape(2, 3)}, {}),
        ({"initializer": [[1, 2], [3, 4]]}, {}),
        ({"initializer": "ones", "shape": (2, 3)}, {}),
        ({"initializer": K.initializers.GlorotUniform(seed=3), "shape": (4, 5)},
         {"initializer": keras.initializers.GlorotUniform(seed=3)}),
        ({"initializer": np.zeros(3), "dtype": "int32", "trainable": False, "name": "count"},
         {}),
    ]
    for theirs_args, ours_override in cases:
        theirs = K.Variable(**theirs_args)
        ours = keras.Variable(**{**theirs_args, **ours_override})
        assert ours.shape == tuple(theirs.shape)
        assert ours.dtype == theirs.dtype
        assert ours.trainable == theirs.trainable
        # (a seeded initializer's values may differ from Keras's in the last bit)
        np.testing.assert_allclose(ours.numpy(), np.asarray(theirs.numpy()), rtol=1e-6)
    assert keras.Variable(1.0, name="lr").name == "lr"


def test_variable_assign_and_arithmetic():
    v = keras.Variable(initializer="zeros", shape=(2, 2))
    v.assign(np.ones((2, 2)))
    v.assign_add(np.full((2, 2), 2.0))
    v.assign_sub(np.eye(2))
    np.testing.assert_array_equal(v.numpy(), [[2, 3], [3, 2]])
    np.testing.assert_array_equal(v.value, v.numpy())
    assert v.numpy().dtype == np.float32
    np.testing.assert_array_equal(v * 2, [[4, 6], [6, 4]])
    np.testing.assert_array_equal(np.asarray(v) + 1, [[3, 4], [4, 3]])
    value = v.numpy()
    value[0, 0] = 100  # numpy() is a copy
    assert v.numpy()[0, 0] == 2


@pytest.mark.parametrize("call, message", [
    (lambda: keras.Variable("ones"), r"keras.Variable 'variable.*': argument shape is "
                                     r"required with an initializer"),
    (lambda: keras.Variable("ones", shape=(2, "a")), r"argument shape must be a tuple of ints"),
    (lambda: keras.Variable(np.ones(3), shape=(4,)), r"argument shape \(4,\) differs from "
                                                     r"the initial value's shape \(3,\)"),
    (lambda: keras.Variable(1.0, name="a/b"), r"keras.Variable: argument name must be a "
                                              r"string without '/'"),
    (lambda: keras.Variable(1.0, aggregation="max"), r"argument aggregation must be one of"),
    (lambda: keras.Variable(np.ones(2)).assign(np.ones(3)),
     r"assign\(\) expected a value of shape \(2,\), got \(3,\)"),
])
def test_variable_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_add_variable_in_a_custom_layer_as_keras():
    def build(K):
        class Affine(K.layers.Layer):
            def build(self, input_shape):
                # Keras 3's order: shape, initializer, dtype, trainable, ..., name
                self.w = self.add_variable((input_shape[-1], 4), "glorot_uniform", name="w")
                self.b = self.add_variable((4,), initializer="ones", name="b")
                self.frozen = self.add_variable((4,), "zeros", None, False, name="frozen")

            def call(self, x):
                return K.ops.matmul(x, self.w) + self.b

        inputs = K.Input((3,))
        return K.Model(inputs, K.layers.Softmax()(Affine(name="affine")(inputs)))

    kiln_model, _ = check_against_keras(build, optimizers=("sgd",))
    layer = kiln_model.get_layer("affine")
    assert [w.path for w in layer.trainable_weights] == ["affine/w", "affine/b"]
    assert [w.path for w in layer.non_trainable_weights] == ["affine/frozen"]
