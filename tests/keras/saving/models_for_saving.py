"""The models the saving tests move between kiln and real Keras: each a `build(K, data_format)`
with K either `kiln.keras` or `keras` (JAX backend), so both sides build the same model."""

import numpy as np


def sequential_cnn(K, data_format="channels_last"):
    shape = (8, 8, 3) if data_format == "channels_last" else (3, 8, 8)
    return K.Sequential([
        K.Input(shape),
        K.layers.Conv2D(4, 3, padding="same", activation="relu", data_format=data_format),
        K.layers.Conv2D(4, 3, activation="relu", data_format=data_format,
                        kernel_regularizer=K.regularizers.L2(1e-3)),
        K.layers.MaxPooling2D(data_format=data_format),
        K.layers.Flatten(data_format=data_format),
        K.layers.Dense(8, activation="relu"),
        K.layers.Dense(3),
        K.layers.Activation("softmax"),
    ])


def resnet_block(K, data_format="channels_last"):
    axis = -1 if data_format == "channels_last" else 1
    shape = (8, 8, 3) if data_format == "channels_last" else (3, 8, 8)
    inputs = K.Input(shape)
    # no bias before a BatchNormalization (as ResNets): its gradient would be rounding noise,
    # which Adam blows up differently in each framework
    x = K.layers.Conv2D(4, 3, padding="same", use_bias=False, data_format=data_format)(inputs)
    x = K.layers.BatchNormalization(axis=axis)(x)
    x = K.layers.Activation("relu")(x)
    y = K.layers.Conv2D(4, 3, padding="same", use_bias=False, data_format=data_format)(x)
    y = K.layers.BatchNormalization(axis=axis)(y)
    x = K.layers.Activation("relu")(K.layers.Add()([x, y]))
    x = K.layers.AveragePooling2D(2, data_format=data_format)(x)
    x = K.layers.Flatten(data_format=data_format)(x)
    outputs = K.layers.Dense(3, activation="softmax")(x)
    return K.Model(inputs, outputs)


def frozen_part(K, data_format="channels_last"):
    model = sequential_cnn(K, data_format)
    model.layers[0].trainable = False  # the first convolution stays fixed
    return model


def nested(K, functional_inner):
    """A Sequential or a Functional model used as a layer of another model."""
    if functional_inner:
        inner_input = K.Input((8, 8, 3))
        inner = K.Model(inner_input, K.layers.Conv2D(2, 1)(K.layers.Conv2D(3, 3)(inner_input)),
                        name="inner")
    else:
        inner = K.Sequential([K.Input((8, 8, 3)), K.layers.Conv2D(3, 3), K.layers.Conv2D(2, 1)],
                             name="inner")
    inputs = K.Input((8, 8, 3))
    x = K.layers.Flatten()(K.layers.BatchNormalization()(inner(inputs)))
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x), name="outer")


BUILDERS = {"sequential_cnn": sequential_cnn, "resnet_block": resnet_block,
            "frozen_part": frozen_part}
# every model in both data formats
CASES = [(name, fmt) for name in sorted(BUILDERS) for fmt in ("channels_last", "channels_first")]


def compile_model(model, K):
    """The compile state the files must carry: Adam's slots, a loss and a metric."""
    model.compile(optimizer=K.optimizers.Adam(learning_rate=0.01),
                  loss="categorical_crossentropy", metrics=["accuracy"])


def fit(model, x, y, epochs=1, batch_size=8):
    return model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)


def data(data_format="channels_last", count=16, seed=0):
    random = np.random.RandomState(seed)
    shape = (count, 8, 8, 3) if data_format == "channels_last" else (count, 3, 8, 8)
    x = random.rand(*shape).astype("float32")
    y = np.eye(3, dtype="float32")[random.randint(0, 3, count)]
    return x, y
