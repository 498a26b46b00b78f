"""Keras 2's backend functions (`from keras import backend as K`): eagerly against numpy with
Keras 2's rules, and inside Lambda layers and a custom layer against the same math written with
real Keras 3's ops (predictions and a training step, so the gradients through them too)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.keras import backend as K  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)
Y = rng.normal(size=(3, 4)).astype(np.float32)


# -- eagerly, against numpy ---------------------------------------------------------------
ELEMENTWISE = [
    (K.square, np.square), (K.exp, np.exp), (K.abs, np.abs), (K.tanh, np.tanh),
    (K.sigmoid, lambda x: 1 / (1 + np.exp(-x))), (K.sqrt, lambda x: np.sqrt(np.maximum(x, 0))),
    (lambda x: K.log(K.abs(x)), lambda x: np.log(np.abs(x))),
    (K.relu, lambda x: np.maximum(x, 0)),
    (lambda x: K.relu(x, alpha=0.1, max_value=0.5),
     lambda x: np.where(x > 0, np.minimum(x, 0.5), 0.1 * x)),
    (lambda x: K.relu(x, threshold=0.2), lambda x: np.where(x > 0.2, x, 0)),
    (lambda x: K.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5)),
    (lambda x: K.clip(x, 0.3, None), lambda x: np.maximum(x, 0.3)),
    (lambda x: K.clip(x, 0.3, 0.1), lambda x: np.full_like(x, 0.3)),  # max < min: min
    (lambda x: K.maximum(x, 0.1), lambda x: np.maximum(x, 0.1)),
    (lambda x: K.minimum(x, Y), lambda x: np.minimum(x, Y)),
    (K.softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    (lambda x: K.softmax(x, axis=0), lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True)),
    (lambda x: K.l2_normalize(x, axis=1),
     lambda x: x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-12))),
    (lambda x: K.l2_normalize(x), lambda x: x / np.sqrt((x * x).sum())),
    (K.ones_like, np.ones_like), (K.zeros_like, np.zeros_like),
    (lambda x: K.mean(x), np.mean), (lambda x: K.sum(x, axis=0), lambda x: x.sum(0)),
    (lambda x: K.mean(x, axis=1, keepdims=True), lambda x: x.mean(1, keepdims=True)),
    (lambda x: K.sum(x, axis=-1, keepdims=True), lambda x: x.sum(-1, keepdims=True)),
    (lambda x: K.max(x, axis=1), lambda x: x.max(1)),
    (lambda x: K.reshape(x, (2, 6)), lambda x: x.reshape(2, 6)),
    (lambda x: K.permute_dimensions(x, (1, 0)), lambda x: x.T),
    (lambda x: K.expand_dims(x), lambda x: x[..., None]),
    (lambda x: K.squeeze(K.expand_dims(x, 1), 1), lambda x: x),
    (lambda x: K.repeat_elements(x, 2, axis=1), lambda x: np.repeat(x, 2, axis=1)),
    (lambda x: K.tile(x, (2, 1)), lambda x: np.tile(x, (2, 1))),
    (lambda x: K.tile(x, 2), lambda x: np.tile(x, 2)),
    (lambda x: K.concatenate([x, Y]), lambda x: np.concatenate([x, Y], -1)),
    (lambda x: K.concatenate([x, Y], axis=0), lambda x: np.concatenate([x, Y], 0)),
    (lambda x: K.stack([x, Y], axis=1), lambda x: np.stack([x, Y], 1)),
    (lambda x: K.dot(x, Y.T), lambda x: x @ Y.T),
    (lambda x: K.switch(x > 0, x, -x), np.abs),
    (lambda x: K.cast(x > 0, "float32"), lambda x: (x > 0).astype(np.float32)),
    (lambda x: K.equal(x, Y), lambda x: x == Y),
    (lambda x: K.argmax(x), lambda x: x.argmax(-1)),
    (lambda x: K.argmax(x, axis=0), lambda x: x.argmax(0)),
    (lambda x: K.gather(x, [2, 0]), lambda x: x[[2, 0]]),
]


@pytest.mark.parametrize("index", range(len(ELEMENTWISE)))
def test_functions_eagerly_as_numpy(index):
    function, expected = ELEMENTWISE[index]
    out = function(X)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, expected(X), rtol=1e-6, atol=1e-6)


def test_shapes_values_and_settings_eagerly():
    assert K.int_shape(X) == (3, 4) and K.shape(X) == (3, 4) and K.ndim(X) == 2
    assert K.epsilon() == 1e-7 and K.floatx() == "float32"
    assert K.sqrt(np.float32(-4.0)) == 0  # Keras 2 clips negatives, no NaN
    assert K.constant(2.0, shape=(2, 3)).dtype == np.float32
    np.testing.assert_array_equal(K.constant([[1, 2]]), np.array([[1.0, 2.0]], np.float32))
    v = K.variable(np.ones((2, 5)), name="v")
    assert K.int_shape(v) == (2, 5) and K.count_params(v) == 10
    K.set_value(v, np.full((2, 5), 3.0))
    np.testing.assert_array_equal(K.get_value(v), np.full((2, 5), 3.0, np.float32))
    np.testing.assert_array_equal(K.eval(v), K.get_value(v))
    assert K.learning_phase() == 0
    assert K.in_train_phase(1.0, 2.0) == 2.0 and K.in_train_phase(lambda: 1.0, 2.0, True) == 1.0
    assert K.in_test_phase(1.0, 2.0) == 1.0
    assert K.random_normal((1000, 2), mean=3.0, stddev=0.5, seed=1).mean() == pytest.approx(
        3.0, abs=0.05)
    assert K.backend() == "tensorflow"


BATCH_DOT = [  # x shape, y shape, axes, Keras 2.2.4's result computed by hand
    ((3, 4), (3, 4), 1, lambda x, y: (x * y).sum(1, keepdims=True)),
    ((3, 4), (3, 4), (1, 1), lambda x, y: (x * y).sum(1, keepdims=True)),
    ((3, 2, 4), (3, 4, 5), None, np.matmul),
    ((3, 2, 4), (3, 4, 5), (2, 1), np.matmul),
    ((3, 2, 4), (3, 5, 4), (2, 2), lambda x, y: np.einsum("bik,bjk->bij", x, y)),
    ((3, 4, 2), (3, 4, 5), (1, 1), lambda x, y: np.einsum("bki,bkj->bij", x, y)),
    # the capsule example's routing: c (b, n, i) with u (b, n, i, d), then o with u
    ((3, 2, 4), (3, 2, 4, 5), (2, 2), lambda x, y: np.einsum("bni,bnid->bnd", x, y)),
    ((3, 2, 5), (3, 2, 4, 5), (2, 3), lambda x, y: np.einsum("bnd,bnid->bni", x, y)),
]


@pytest.mark.parametrize("x_shape, y_shape, axes, expected", BATCH_DOT)
def test_batch_dot_follows_keras_2s_axes_rules(x_shape, y_shape, axes, expected):
    x = rng.normal(size=x_shape).astype(np.float32)
    y = rng.normal(size=y_shape).astype(np.float32)
    np.testing.assert_allclose(K.batch_dot(x, y, axes), expected(x, y), rtol=1e-5, atol=1e-6)


def test_dot_of_nd_by_2d_contracts_the_last_axis():
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    w = rng.normal(size=(4, 5)).astype(np.float32)
    assert K.dot(x, w).shape == (2, 3, 5)
    np.testing.assert_allclose(K.dot(x, w), np.einsum("abk,kn->abn", x, w), rtol=1e-5)
    y = rng.normal(size=(6, 4, 5)).astype(np.float32)  # Keras 2: x's free axes, then y's
    assert K.dot(x, y).shape == (2, 3, 6, 5)


# -- inside models, against the same math in Keras 3 ----------------------------------------
def two_sided(kiln_function, keras_function):
    """A Lambda body for `build(K)`: the K version in kiln, the keras.ops one in Keras."""
    def build_lambda(module):
        if module is kk:
            return kk.layers.Lambda(kiln_function)
        return module.layers.Lambda(keras_function)

    return build_lambda


def classifier(body, input_shape=(6,), width=6):
    def build(module):
        inputs = module.Input(input_shape)
        x = module.layers.Dense(width, name="features")(inputs)
        x = body(module)(x)
        if len(x.shape) > 2:
            x = module.layers.Flatten()(x)
        x = module.layers.Dense(3, name="classes")(x)
        return module.Model(inputs, module.layers.Activation("softmax")(x))

    return build


def kiln_elementwise(x):
    return K.concatenate([K.sqrt(K.square(x) + 1.0), K.exp(-K.abs(x)),
                          K.log(K.sigmoid(x) + 1.0), K.maximum(x, 0.1),
                          K.minimum(x, K.tanh(x)), K.clip(x, -0.5, 0.5),
                          K.relu(x, alpha=0.1, max_value=0.8), K.switch(x > 0.0, x, x * 0.5)])


def keras_elementwise(x):
    ops = real_keras().ops
    return ops.concatenate([ops.sqrt(ops.square(x) + 1.0), ops.exp(-ops.abs(x)),
                            ops.log(ops.sigmoid(x) + 1.0), ops.maximum(x, 0.1),
                            ops.minimum(x, ops.tanh(x)), ops.clip(x, -0.5, 0.5),
                            real_keras().activations.relu(x, negative_slope=0.1,
                                                          max_value=0.8),
                            ops.where(x > 0.0, x, x * 0.5)], axis=-1)


def test_elementwise_functions_in_a_lambda_train_as_keras():
    check_against_keras(classifier(two_sided(kiln_elementwise, keras_elementwise)),
                        optimizers=("sgd",), steps=1)


def kiln_reductions(x):
    centred = x - K.mean(x, axis=1, keepdims=True)
    return K.concatenate([K.l2_normalize(centred, axis=1), K.softmax(x),
                          x * K.sum(K.square(x), axis=-1, keepdims=True) * 0.1,
                          K.ones_like(x) + K.zeros_like(x)], axis=-1)


def keras_reductions(x):
    ops = real_keras().ops
    centred = x - ops.mean(x, axis=1, keepdims=True)
    norm = ops.sqrt(ops.maximum(ops.sum(ops.square(centred), axis=1, keepdims=True), 1e-12))
    return ops.concatenate([centred / norm, ops.softmax(x),
                            x * ops.sum(ops.square(x), axis=-1, keepdims=True) * 0.1,
                            ops.ones_like(x) + ops.zeros_like(x)], axis=-1)


def test_reductions_and_normalization_in_a_lambda_train_as_keras():
    check_against_keras(classifier(two_sided(kiln_reductions, keras_reductions)),
                        optimizers=("sgd",), steps=1)


def kiln_shapes(x):
    x = K.reshape(x, (-1, 3, 4))
    x = K.permute_dimensions(x, (0, 2, 1))  # (4, 3)
    x = K.squeeze(K.expand_dims(x, -1), -1)
    x = K.repeat_elements(x, 2, axis=2)  # (4, 6)
    return K.tile(x, (1, 1, 2))  # (4, 12)


def keras_shapes(x):
    ops = real_keras().ops
    x = ops.transpose(ops.reshape(x, (-1, 3, 4)), (0, 2, 1))
    return ops.tile(ops.repeat(x, 2, axis=2), (1, 1, 2))


def test_shape_functions_in_a_lambda_train_as_keras():
    check_against_keras(classifier(two_sided(kiln_shapes, keras_shapes), width=12),
                        optimizers=("sgd",), steps=1)


def kiln_products(x):
    a, b = x[:, :4], x[:, 4:]
    pairs = K.stack([a, b], axis=1)  # (2, 4)
    gram = K.batch_dot(pairs, pairs, axes=(2, 2))  # (2, 2)
    return K.concatenate([K.batch_dot(a, b, axes=1), K.batch_flatten(gram),
                          K.batch_flatten(K.batch_dot(pairs, K.permute_dimensions(
                              pairs, (0, 2, 1))))])


def keras_products(x):
    ops = real_keras().ops
    a, b = x[:, :4], x[:, 4:]
    pairs = ops.stack([a, b], axis=1)
    gram = ops.matmul(pairs, ops.transpose(pairs, (0, 2, 1)))
    return ops.concatenate([ops.sum(a * b, axis=1, keepdims=True), ops.reshape(gram, (-1, 4)),
                            ops.reshape(gram, (-1, 4))], axis=-1)


def test_stack_and_batch_dot_in_a_lambda_train_as_keras():
    check_against_keras(classifier(two_sided(kiln_products, keras_products), width=8),
                        optimizers=("sgd",), steps=1)


def projection_layer(module):
    """A custom layer whose call() is K.dot of a 3D tensor by its (K, N) kernel."""
    class Projection(module.layers.Layer):
        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], 5), name="kernel")

        def call(self, x):
            if module is kk:
                return K.dot(x, self.kernel)
            return module.ops.matmul(x, self.kernel)

    return Projection(name="projection")


def test_dot_in_a_custom_layer_trains_as_keras():
    def build(module):
        inputs = module.Input((6,))
        x = module.layers.Reshape((2, 3))(module.layers.Dense(6, name="features")(inputs))
        x = module.layers.Flatten()(projection_layer(module)(x))
        return module.Model(inputs, module.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=("sgd",), steps=1)


def test_gather_of_a_weight_by_ids_is_a_lookup():
    class Lookup(kk.layers.Layer):
        def build(self, input_shape):
            self.table = self.add_weight(shape=(10, 3), name="table")

        def call(self, ids):
            return K.gather(self.table, ids)

    inputs = kk.Input((4,), dtype="int32")
    layer = Lookup()
    model = kk.Model(inputs, layer(inputs))
    ids = np.array([[1, 2, 3, 9], [0, 0, 5, 7]])
    np.testing.assert_allclose(model.predict(ids, verbose=0), layer.table.numpy()[ids],
                               rtol=1e-6)


def test_int_shape_and_shape_of_model_tensors():
    inputs = kk.Input((5, 3))
    assert K.int_shape(inputs) == (None, 5, 3) and K.ndim(inputs) == 3
    assert K.shape(inputs)[0] is None
    dense = kk.layers.Dense(4)
    dense(inputs)
    assert K.count_params(dense.kernel) == 12


def test_function_runs_a_model_from_inputs_to_an_inner_output():
    inputs = kk.Input((6,))
    hidden = kk.layers.Dense(4, activation="relu", name="hidden")(inputs)
    outputs = kk.layers.Dense(3, activation="softmax")(hidden)
    model = kk.Model(inputs, outputs)
    x = rng.normal(size=(5, 6)).astype(np.float32)
    get_hidden = K.function([model.input, K.learning_phase()], [model.get_layer("hidden").output])
    (out,) = get_hidden([x, 0])
    kernel, bias = model.get_layer("hidden").get_weights()
    np.testing.assert_allclose(out, np.maximum(x @ kernel + bias, 0), rtol=1e-5, atol=1e-6)
    both = K.function([model.input], [hidden, outputs])([x])
    np.testing.assert_allclose(both[1], model.predict(x, verbose=0), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="learning phase input was fed 1"):
        get_hidden([x, 1])


def test_gradients_are_refused_by_name():
    inputs = kk.Input((6,))
    outputs = kk.layers.Dense(3)(inputs)
    with pytest.raises(NotImplementedError, match="K.gradients.*model inputs"):
        K.gradients(outputs, inputs)


def test_in_train_phase_inside_a_model_needs_training():
    inputs = kk.Input((6,))
    with pytest.raises(NotImplementedError, match="in_train_phase without training="):
        kk.layers.Lambda(lambda x: K.in_train_phase(x * 2.0, x))(inputs)


def test_unsupported_products_are_refused_by_name():
    inputs = kk.Input((6,))
    with pytest.raises(NotImplementedError, match="K.dot of shapes"):
        kk.layers.Lambda(lambda x: K.dot(x, K.expand_dims(x)))(inputs)
