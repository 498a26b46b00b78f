"""A user's keras.regularizers.Regularizer subclass (its `__call__` written with keras.ops,
traced into the training step) and keras.constraints.Constraint subclass (applied after each
optimizer update) against Keras 3: the losses fit and evaluate report (penalties included),
the trained weights, the configs, and the errors for what cannot be planned."""

import os

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def custom_classes(K):
    class Smooth(K.regularizers.Regularizer):
        """Nonlinear: strength * sum(log(1 + x^2)) + 0.01 * sum|x|."""

        def __init__(self, strength=0.05):
            self.strength = strength

        def __call__(self, x):
            ops = K.ops
            return (self.strength * ops.sum(ops.log(1.0 + ops.square(x)))
                    + 0.01 * ops.sum(ops.abs(x)))

        def get_config(self):
            return {"strength": self.strength}

    class ScaledClip(K.constraints.Constraint):
        def __init__(self, limit=0.2):
            self.limit = limit

        def __call__(self, w):
            return K.ops.clip(w, -self.limit, self.limit) * 0.9

        def get_config(self):
            return {"limit": self.limit}

    return Smooth, ScaledClip


def dense_model(K):
    Smooth, ScaledClip = custom_classes(K)
    # biases start away from 0: |x|'s gradient at exactly 0 differs (see regularizers.py)
    return K.Sequential([
        K.Input((5,)),
        K.layers.Dense(4, activation="tanh", kernel_regularizer=Smooth(),
                       bias_regularizer=Smooth(0.1), bias_initializer="glorot_uniform",
                       kernel_constraint=ScaledClip(0.3)),
        K.layers.Dense(3, activation="softmax", kernel_regularizer=Smooth(0.02),
                       bias_constraint=ScaledClip(0.05))])


def conv_model(K):
    Smooth, ScaledClip = custom_classes(K)
    return K.Sequential([
        K.Input((6, 6, 2)),
        K.layers.Conv2D(8, 3, kernel_regularizer=Smooth(), kernel_constraint=ScaledClip()),
        K.layers.Flatten(),
        K.layers.Dense(3, activation="softmax", kernel_regularizer=Smooth(0.02))])


def train_both(keras, build, x, y, epochs):
    kiln_model = build(kk)
    keras_model = build(keras)
    keras_model.set_weights(kiln_model.get_weights())
    results = []
    for K, model in ((kk, kiln_model), (keras, keras_model)):
        model.compile(optimizer=K.optimizers.SGD(0.1), loss="categorical_crossentropy")
        history = model.fit(x, y, batch_size=len(x), epochs=epochs, shuffle=False, verbose=0)
        results.append((history.history["loss"], model.get_weights(),
                        model.evaluate(x, y, verbose=0)))
    return results


@pytest.mark.parametrize("build,shape,epochs", [(dense_model, (5,), 3),
                                                (conv_model, (6, 6, 2), 2)],
                         ids=["dense", "conv2d"])
def test_custom_regularizer_and_constraint_train_as_keras(keras, build, shape, epochs):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, *shape)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    (losses, weights, evaluated), (keras_losses, keras_weights, keras_evaluated) = \
        train_both(keras, build, x, y, epochs)
    np.testing.assert_allclose(losses, keras_losses, rtol=1e-5)
    for ours, theirs in zip(weights, keras_weights, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(evaluated, keras_evaluated, rtol=1e-4)
    # the constraint ran after the last update: every constrained kernel is within its limit
    assert np.abs(weights[0]).max() <= 0.9 * (0.3 if build is dense_model else 0.2) + 1e-7


def test_penalty_enters_the_loss(keras):
    """The same model without the penalties reports a smaller loss (evaluate included)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]
    model = dense_model(kk)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    plain = kk.Sequential([kk.Input((5,)), kk.layers.Dense(4, activation="tanh"),
                           kk.layers.Dense(3, activation="softmax")])
    plain.compile(optimizer="sgd", loss="categorical_crossentropy")
    plain.set_weights(model.get_weights())
    smooth, _ = custom_classes(kk)
    kernels = model.get_weights()
    expected = (smooth()(kernels[0]) + smooth(0.1)(kernels[1]) + smooth(0.02)(kernels[2]))
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0) - plain.evaluate(x, y, verbose=0),
                               expected, rtol=1e-5)


def test_custom_objects_config_round_trip(keras):
    Smooth, ScaledClip = custom_classes(kk)
    KerasSmooth, KerasClip = custom_classes(keras)
    assert kk.regularizers.serialize(Smooth(0.3)) == keras.regularizers.serialize(
        KerasSmooth(0.3))
    assert kk.constraints.serialize(ScaledClip(0.4)) == keras.constraints.serialize(
        KerasClip(0.4))
    layer = kk.layers.Dense(2, kernel_regularizer=Smooth(0.3), bias_constraint=ScaledClip(0.4))
    config = layer.get_config()
    with kk.saving.custom_object_scope({"Smooth": Smooth, "ScaledClip": ScaledClip}):
        copy = kk.layers.Dense.from_config(config)
    assert isinstance(copy.kernel_regularizer, Smooth)
    assert copy.kernel_regularizer.strength == 0.3
    assert isinstance(copy.bias_constraint, ScaledClip) and copy.bias_constraint.limit == 0.4
    assert copy.get_config() == config
    with pytest.raises(ValueError, match="Smooth"):
        kk.layers.Dense.from_config(config)  # the class is not known without its scope


def test_registered_regularizer_round_trip():
    @kk.saving.register_keras_serializable(package="test_custom_reg")
    class Quartic(kk.regularizers.Regularizer):
        def __init__(self, scale=0.1):
            self.scale = scale

        def __call__(self, x):
            return self.scale * kk.ops.sum(kk.ops.square(kk.ops.square(x)))

        def get_config(self):
            return {"scale": self.scale}

    config = kk.regularizers.serialize(Quartic(0.5))
    assert config["registered_name"] == "test_custom_reg>Quartic"
    restored = kk.regularizers.get(config)
    assert isinstance(restored, Quartic) and restored.scale == 0.5
    np.testing.assert_allclose(restored(np.array([1.0, 2.0])), 0.5 * 17)


def test_regularizer_errors_name_it():
    class PerRow(kk.regularizers.Regularizer):
        def __call__(self, x):
            return kk.ops.sum(x, axis=1)  # not one value

    class Product(kk.regularizers.Regularizer):
        def __call__(self, x):
            return kk.ops.prod(x)  # no engine op for prod yet

    for regularizer, match in ((PerRow(), "PerRow.*one value"), (Product(), "Product.*prod")):
        with pytest.raises((ValueError, NotImplementedError), match=match):
            kk.layers.Dense(2, kernel_regularizer=regularizer)(kk.Input((3,)))
    with pytest.raises(ValueError, match="activity_regularizer"):
        kk.layers.Dense(2, activity_regularizer=PerRow())


def test_constraint_returning_another_shape_is_refused():
    class Bad(kk.constraints.Constraint):
        def __call__(self, w):
            return kk.ops.sum(w, axis=0)

    model = kk.Sequential([kk.Input((3,)), kk.layers.Dense(2, kernel_constraint=Bad())])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="Bad.*'dense.*/kernel'.*shape"):
        model.fit(np.ones((2, 3), np.float32), np.ones((2, 2), np.float32), verbose=0)
