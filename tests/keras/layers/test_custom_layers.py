"""Custom layers (`keras.layers.Layer` subclasses written with `add_weight` and `keras.ops`)
against real Keras 3 (JAX backend), through the shared checker (keras_oracle.py): the same
classes written once for both APIs, the same weights, then predictions and one SGD step.
Also add_weight's signatures and defaults, layers that own layers, and the refusal of numpy
on a symbolic tensor naming the layer."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import keras_oracle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

SGD = ("sgd",)


def _needs_broadcast_op():
    pytest.importorskip("kiln.ops.broadcast", reason="the engine's BroadcastBinaryOp")


def unary_layer(K):
    class SoftShape(K.layers.Layer):
        """Element-wise math, pooling and reductions: no weights."""

        def call(self, x, training=None):
            y = K.ops.sqrt(K.ops.square(x) + 1.0) * 0.5 - K.ops.relu(x) / 4.0
            pooled = K.ops.max_pool(x, 2, strides=1, padding="same") - K.ops.average_pool(
                x, (2, 3), strides=1, padding="same")
            # reductions (with keepdims: broadcast back against x)
            centered = x - K.ops.mean(x, axis=-1, keepdims=True)
            normalized = centered / K.ops.sqrt(K.ops.var(x, axis=-1, keepdims=True) + 1e-3)
            spread = K.ops.std(x, axis=(1, 2), keepdims=True)
            return (K.ops.tanh(y) + K.ops.clip(1.0 - x, -0.5, 2.0) + K.ops.abs(x) ** 2 + pooled
                    + normalized * spread)

    return SoftShape


def shape_layer(K):
    class Shuffle(K.layers.Layer):
        """Moves values around with keras.ops: (N, 3, 3, 3) in, (N, 57) out."""

        def call(self, x):
            y = K.ops.transpose(x, (0, 2, 1, 3))
            y = K.ops.concatenate([y, K.ops.log_softmax(x, axis=-1)], axis=-1)
            y = K.ops.expand_dims(K.ops.reshape(y, (-1, 9, 6)), 1)
            y = K.ops.reshape(K.ops.squeeze(y, 1), (-1, 54))
            sums = K.ops.sum(x, axis=(1, 3))
            return K.ops.concatenate([y - K.ops.zeros_like(y), sums], -1)

    return Shuffle


def test_element_wise_reduction_and_shape_ops_trace_into_the_model_as_keras():
    _needs_broadcast_op()

    def build(K):
        x = K.layers.Conv2D(3, 3)(inputs := K.Input((5, 5, 2)))
        x = shape_layer(K)(name="shuffle")(unary_layer(K)(name="soft_shape")(x))
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=SGD, steps=1, training_forward=False)


def owner_layer(K):
    class Block(K.layers.Layer):
        """Owns a Dense made in __init__ and applies an activation through keras.ops."""

        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.dense = K.layers.Dense(units)

        def call(self, x):
            return K.ops.gelu(self.dense(x)) * 3.0

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    return Block


def linear_layer(K):
    class Linear(K.layers.Layer):
        """Dense written by hand: matmul with a weight (the engine's inner product)."""

        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), name="w")
            self.b = self.add_weight(shape=(self.units,), initializer="random_normal",
                                     name="b")

        def call(self, x):
            return K.ops.relu(K.ops.matmul(x, self.w) + self.b)

    return Linear


def power_layer(K):
    class Power(K.layers.Layer):
        """Tensor ** weight and tensor ** tensor (the engine's BroadcastBinaryOp power)."""

        def build(self, input_shape):
            self.exponent = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                            name="exponent")

        def call(self, x):
            base = K.ops.sigmoid(x) + 0.5
            return K.ops.power(base, self.exponent) + base ** K.ops.sigmoid(x)

    return Power


def test_matmul_power_a_layer_owning_a_dense_and_a_lambda_train_as_keras():
    _needs_broadcast_op()

    def build(K):
        inputs = K.Input((6,))
        x = linear_layer(K)(5, name="linear")(inputs)
        x = power_layer(K)(name="power")(x)
        x = owner_layer(K)(4, name="block")(x)
        x = K.layers.Lambda(lambda t: K.ops.tanh(t) * 2.0 - K.ops.sigmoid(t)
                            + K.ops.logsumexp(t, axis=-1, keepdims=True)
                            - K.ops.max(t, axis=-1, keepdims=True)
                            + K.ops.min(t, axis=1, keepdims=True),
                            output_shape=(4,), name="shape_it")(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kiln_model, _ = check_against_keras(build, optimizers=SGD, steps=1, training_forward=False)
    block = kiln_model.layers[3]
    assert [w.path for w in block.weights] == ["dense/kernel", "dense/bias"]
    assert block.get_config()["units"] == 4
    assert kiln_model.layers[4].compute_output_shape((None, 4)) == (None, 4)


def test_add_weight_keras3_defaults_and_keras2_positional_order():
    keras = keras_oracle.real_keras()
    for K in (kk, keras):
        K.backend.clear_session()

        class Holder(K.layers.Layer):
            def build(self, input_shape):
                self.a = self.add_weight(shape=(2, 3), name="a")
                self.b = self.add_weight((3,), "ones", name="b", trainable=False)
                self.c = self.add_weight()  # scalar, auto-named 'variable'

            def call(self, x):
                return x

        layer = Holder(name="holder")
        layer(K.Input((3,)))
        described = [(w.name, tuple(w.shape), w.path, bool(w.trainable)) for w in layer.weights]
        assert described == [("a", (2, 3), "holder/a", True), ("variable", (), "holder/variable",
                                                                True),
                             ("b", (3,), "holder/b", False)], K
        np.testing.assert_array_equal(np.asarray(layer.b.numpy()), np.ones(3))
        a = np.asarray(layer.a.numpy())
        limit = np.sqrt(6 / 5)  # glorot_uniform's default for floats
        assert np.all(np.abs(a) <= limit) and np.std(a) > 0

    class Legacy(kk.layers.Layer):
        def build(self, input_shape):
            # Keras 2: (name, shape, dtype, initializer, regularizer, trainable)
            self.w = self.add_weight("w", (3,), "float32", "zeros", None, False)

        def call(self, x):
            return x

    legacy = Legacy()
    legacy(kk.Input((3,)))
    assert legacy.w.path == "legacy/w" and not legacy.w.trainable
    np.testing.assert_array_equal(legacy.w.numpy(), np.zeros(3))


def test_add_weight_bad_arguments_name_the_layer():
    layer = kk.layers.Layer(name="mine")
    with pytest.raises(ValueError, match="Layer 'mine'.*dtype must be 'float32'"):
        layer.add_weight(shape=(2,), dtype="int32")
    with pytest.raises(ValueError, match="Layer 'mine'.*initializer of weight 'k'"):
        layer.add_weight(shape=(2,), initializer="no_such_thing", name="k")
    with pytest.raises(TypeError, match="Layer 'mine'.*unexpected keyword.*'shapes'"):
        layer.add_weight(shapes=(2,))


def test_numpy_on_a_symbolic_tensor_names_the_layer_and_keras_ops():
    class NumpySum(kk.layers.Layer):
        def call(self, x):
            return np.sum(x, axis=-1)

    class NumpyExp(kk.layers.Layer):
        def call(self, x):
            return np.exp(x)

    class Branches(kk.layers.Layer):
        def call(self, x):
            return x if x else -x

    inputs = kk.Input((4,))
    with pytest.raises(TypeError, match=r"Branches 'branches': bool\(\).*keras.ops"):
        Branches()(inputs)
    with pytest.raises(TypeError, match=r"NumpySum 'summer': numpy.sum .*use keras.ops"):
        NumpySum(name="summer")(inputs)
    with pytest.raises(TypeError, match=r"NumpyExp 'numpy_exp': numpy.exp .*keras.ops"):
        NumpyExp()(inputs)


def test_an_operation_without_an_engine_op_is_refused_by_name():
    class Sorter(kk.layers.Layer):
        def call(self, x):
            return kk.ops.prod(x, axis=-1)  # no engine op yet

    with pytest.raises(NotImplementedError,
                       match=r"Sorter 'sorter': keras.ops.prod works eagerly .* not yet inside"):
        Sorter()(kk.Input((4,)))


def test_an_op_on_a_weight_alone_inside_call_is_refused_not_frozen():
    class Exponent(kk.layers.Layer):
        def build(self, input_shape):
            self.log_scale = self.add_weight(shape=(4,), name="log_scale")

        def call(self, x):
            return x * kk.ops.exp(self.log_scale)

    with pytest.raises(NotImplementedError, match=r"Exponent 'exponent'.*'exponent/log_scale'"):
        Exponent()(kk.Input((4,)))


def test_get_config_of_a_subclass_without_one_is_its_arguments_as_keras():
    keras = keras_oracle.real_keras()
    configs = []
    for K in (kk, keras):
        class Scaled(K.layers.Layer):
            def __init__(self, factor, offset=0.5, **kwargs):
                super().__init__(**kwargs)
                self.factor, self.offset = factor, offset

            def call(self, x):
                return x * self.factor + self.offset

        configs.append(Scaled(2.0, name="scaled", trainable=False).get_config())
        again = Scaled.from_config(configs[-1])
        assert (again.factor, again.offset, again.trainable) == (2.0, 0.5, False)
    assert configs[0] == configs[1]


# -- weights and tensors as broadcast operands (the engine's BroadcastBinaryOp) -------------------
def scale_and_bias_layer(K):
    class ScaleAndBias(K.layers.Layer):
        """A 2x2 convolution with its own kernel, then a learned per-channel scale
        (L2-regularized), bias and a frozen per-channel offset."""

        def __init__(self, data_format="channels_last", **kwargs):
            super().__init__(**kwargs)
            self.data_format = data_format

        def build(self, input_shape):
            last = self.data_format == "channels_last"
            channels = input_shape[-1] if last else input_shape[1]
            shape = (channels,) if last else (channels, 1, 1)
            self.scale = self.add_weight(shape=shape, initializer="random_normal",
                                         regularizer=K.regularizers.L2(0.01), name="scale")
            self.bias = self.add_weight(shape=shape, initializer="random_normal", name="bias")
            self.offset = self.add_weight(shape=shape, initializer="random_uniform",
                                          trainable=False, name="offset")
            self.mixer = self.add_weight(shape=(2, 2, channels, channels), name="mixer")

        def call(self, x):
            mixed = K.ops.conv(x, self.mixer, padding="same", data_format=self.data_format)
            return K.ops.add(K.ops.multiply(mixed, self.scale), self.bias) - self.offset

    return ScaleAndBias


def excite_layer(K):
    class Excite(K.layers.Layer):
        """Squeeze-and-excitation's shape: x times a gate from its spatial mean."""

        def build(self, input_shape):
            self.gate = self.add_weight(shape=(1, 1, input_shape[-1]),
                                        initializer="random_normal", name="gate")

        def call(self, x):
            pooled = K.ops.mean(x, axis=(1, 2), keepdims=True)
            gate = K.ops.sigmoid(pooled - self.gate)
            return x * gate + K.ops.maximum(x, gate) / 2.0

    return Excite


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_per_channel_scale_and_bias_after_conv2d_trains_as_keras(data_format):
    """channels_last adds a layer broadcasting a tensor against its own spatial mean."""
    _needs_broadcast_op()

    def build(K):
        shape = (5, 5, 2) if data_format == "channels_last" else (2, 5, 5)
        inputs = K.Input(shape)
        x = K.layers.Conv2D(3, 3, data_format=data_format)(inputs)
        x = scale_and_bias_layer(K)(data_format, name="scale_and_bias")(x)
        if data_format == "channels_last":
            x = excite_layer(K)(name="excite")(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=SGD, steps=1, training_forward=False)


def test_shapes_that_do_not_broadcast_name_both_and_the_op():
    class Mismatch(kk.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(5,), name="w")

        def call(self, x):
            return kk.ops.multiply(x, self.w)

    with pytest.raises(ValueError, match=r"Mismatch 'mismatch'.*multiply.*\(4,\).*\(5,\)"):
        Mismatch()(kk.Input((4,)))


def registered_scale(K):
    @K.saving.register_keras_serializable(package="custom_layer_tests")
    class Scale(K.layers.Layer):
        def __init__(self, factor=1.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal",
                                     name="w")

        def call(self, x):
            return K.ops.multiply(x, self.w) * self.factor

    return Scale


def test_a_registered_custom_layer_called_twice_saves_loads_and_trains_as_keras(tmp_path):
    """One layer called twice (its weight read by two ops: the gradients add up), saved by
    kiln, loaded by both, trained one SGD step on both."""
    _needs_broadcast_op()
    keras = keras_oracle.real_keras()
    registered_scale(keras)
    inputs = kk.Input((4,))
    scale = registered_scale(kk)(2.0, name="scale")
    ours = kk.Model(inputs, kk.layers.Dense(2)(scale(scale(inputs))))
    ours.save(tmp_path / "scale.keras")
    theirs = keras.models.load_model(tmp_path / "scale.keras")
    again = kk.models.load_model(tmp_path / "scale.keras")
    assert again.layers[1].get_config()["factor"] == 2.0
    x = np.random.default_rng(0).random((3, 4), np.float32)
    y = np.random.default_rng(1).random((3, 2), np.float32)
    expected = ours.predict(x, verbose=0)
    np.testing.assert_allclose(np.asarray(theirs(x)), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    for model, K in ((ours, kk), (theirs, keras)):
        model.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
        model.fit(x, y, batch_size=3, shuffle=False, verbose=0)
    for path, mine, real in zip([w.path for w in ours.weights], ours.get_weights(),
                                theirs.get_weights()):
        np.testing.assert_allclose(mine, real, rtol=1e-4, atol=1e-5, err_msg=path)


def test_a_call_branching_on_training_is_refused_not_traced_once():
    class Noisy(kk.layers.Layer):
        def call(self, x, training=None):
            return x * 0.5 if training else x

    class Steady(kk.layers.Layer):
        def call(self, x, training=None):
            return kk.ops.relu(x)

    inputs = kk.Input((4,))
    with pytest.raises(NotImplementedError, match=r"Noisy 'noisy'.*training=True"):
        Noisy()(inputs)
    Steady()(inputs)
    # told explicitly while a functional model is built: Keras's fit passes training=True
    # over it all the same (keras/src/models/functional.py), so it is refused too
    with pytest.raises(NotImplementedError, match=r"Noisy 'told'.*training=True"):
        Noisy(name="told")(inputs, training=False)

    class Classifier(kk.Model):  # inside a subclassed call() a value given stands
        def __init__(self):
            super().__init__()
            self.noisy = Noisy(name="inside")

        def call(self, x):
            return self.noisy(x, training=False)

    model = Classifier()
    model.build((None, 4))
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)


def test_a_scalar_weight_and_numpy_constants_train_with_the_right_gradient():
    _needs_broadcast_op()

    class Gain(kk.layers.Layer):
        def build(self, input_shape):
            self.gain = self.add_weight(shape=(), initializer="ones", name="gain")

        def call(self, x):
            return kk.ops.multiply(x, self.gain) + np.array(2.0) - x / np.float32(4)

    inputs = kk.Input((3, 3, 2))
    model = kk.Model(inputs, Gain()(inputs))
    x = np.random.default_rng(0).random((2, 3, 3, 2), np.float32)
    np.testing.assert_allclose(model.predict(x, verbose=0), x * 0.75 + 2, rtol=1e-6)
    model.compile(optimizer=kk.optimizers.SGD(0.1), loss="mse")
    model.fit(x, np.zeros_like(x), batch_size=2, verbose=0)
    y = x * 0.75 + 2.0  # d mean(y**2) / d gain = mean(2 y x)
    np.testing.assert_allclose(model.get_weights()[0], 1 - 0.1 * np.mean(2 * y * x), rtol=1e-5)


def test_saturated_softmax_trains_as_keras():
    """Large weights push some true-class probabilities below Keras's epsilon: Keras clips
    them in the loss and its gradient is zero there; kiln's fused softmax + cross-entropy
    head must give the same step (a fan-out through abs(x) + x on the way)."""

    class AbsPlus:
        def __init__(self, K):
            class Layer(K.layers.Layer):
                def call(self, x):
                    return K.ops.abs(x) + x
            self.layer = Layer

    def build(K):
        inputs = K.Input((4, 4, 2))
        x = K.layers.Conv2D(3, 3, kernel_initializer=K.initializers.RandomNormal(
            stddev=2.0, seed=3))(inputs)
        x = K.layers.Flatten()(AbsPlus(K).layer()(x))
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=SGD, steps=1)
