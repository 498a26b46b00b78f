"""A residual block with BatchNormalization (conv -> BN -> relu, add -> relu: the fused forms
of batch norm + relu and add + relu) against real Keras 3 (JAX backend) on the same weights:
predictions, one SGD step's new weights and the moving statistics, in both data formats."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
real_keras = pytest.importorskip("keras")

from kiln import keras  # noqa: E402


def residual_block(module, data_format):
    layers = module.layers
    shape = (6, 6, 3) if data_format == "channels_last" else (3, 6, 6)
    axis = -1 if data_format == "channels_last" else 1
    f = dict(data_format=data_format)
    inputs = module.Input(shape)
    x = layers.Conv2D(8, 3, padding="same", **f)(inputs)
    x = layers.BatchNormalization(axis=axis)(x)
    x = layers.Activation("relu")(x)
    y = layers.Conv2D(8, 3, strides=1, padding="same", **f)(x)
    y = layers.BatchNormalization(axis=axis)(y)
    x = layers.Activation("relu")(layers.add([x, y]))
    x = layers.AveragePooling2D(2, **f)(x)
    outputs = layers.Dense(3, activation="softmax")(layers.Flatten(**f)(x))
    return module.Model(inputs, outputs)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_residual_block_matches_keras(data_format):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(8, 6, 6, 3)).astype(np.float32)
    if data_format == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    ours, theirs = residual_block(keras, data_format), residual_block(real_keras, data_format)
    assert [w.shape for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    start = ours.get_weights()
    theirs.set_weights(start)
    # float32 sums in different orders: 1e-5 relative on values of order 1
    np.testing.assert_allclose(ours.predict(x), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    # predict() ran both batch norms folded into their convolutions, each one's scale and
    # shift computed by one numba call (not four tiny oneDNN calls)
    calls = ours._plan(False, 8).describe()
    assert sum("folded scale and shift" in c for c in calls) == 2
    assert not any("folded scale" in c and "times gamma" in c for c in calls)
    assert not any("batch_normalization" in c and "forward" in c for c in calls)
    ours.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(1.0))
    theirs.compile(loss="categorical_crossentropy", optimizer=real_keras.optimizers.SGD(1.0))
    loss = ours.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert loss == pytest.approx(float(theirs.train_on_batch(x, y)), rel=1e-5)
    for after, expected, before, variable in zip(ours.get_weights(), theirs.get_weights(),
                                                 start, theirs.weights):
        np.testing.assert_allclose(after, expected, rtol=1e-4, atol=1e-6, err_msg=variable.path)
        if "bias" not in variable.path:  # conv biases before a batch norm get no gradient
            assert not np.allclose(after, before), variable.path
    # and predictions after the step still agree (the folded scale follows the new weights)
    np.testing.assert_allclose(ours.predict(x), theirs.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-6)
