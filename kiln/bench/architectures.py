"""Benchmark architectures written once for any Keras-compatible module `K` (kiln.keras or
real Keras 3): the harness builds kiln's and the Keras peers' copies from the same code, and
the tests compare them. Nothing here imports a framework."""


def resnet20(K, data_format="channels_last", activation="relu"):
    """resnet_v1(input_shape, depth=20) of the Keras 2 example cifar10_resnet.py, 10 classes.

    The example's kernel_regularizer=l2(1e-4) is left out in every framework's copy alike:
    PyTorch's copy has no per-layer penalty, and the step compared stays the same everywhere
    (kiln adds the penalty in one pass over each kernel, examples/cifar10_resnet.py has it). `activation` replaces relu everywhere (tests use tanh)."""
    layers = K.layers
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    f = dict(data_format=data_format)
    channel_axis = -1 if data_format == "channels_last" else 1
    relu = activation

    def resnet_layer(x, filters=16, kernel_size=3, strides=1, activation=relu,
                     batch_normalization=True):
        x = layers.Conv2D(filters, kernel_size=kernel_size, strides=strides, padding="same",
                          kernel_initializer="he_normal", **f)(x)
        if batch_normalization:
            x = layers.BatchNormalization(axis=channel_axis)(x)
        if activation is not None:
            x = layers.Activation(activation)(x)
        return x

    inputs = K.Input(shape=shape)
    x = resnet_layer(inputs)
    filters = 16
    for stack in range(3):
        for block in range(3):
            strides = 2 if stack > 0 and block == 0 else 1
            y = resnet_layer(x, filters, strides=strides)
            y = resnet_layer(y, filters, activation=None)
            if strides == 2:  # projection shortcut: 1x1 conv, no BN, no activation
                x = resnet_layer(x, filters, kernel_size=1, strides=strides, activation=None,
                                 batch_normalization=False)
            x = layers.add([x, y])
            x = layers.Activation(relu)(x)
        filters *= 2
    x = layers.AveragePooling2D(pool_size=8, **f)(x)
    y = layers.Flatten(**f)(x)
    outputs = layers.Dense(10, activation="softmax", kernel_initializer="he_normal")(y)
    return K.Model(inputs=inputs, outputs=outputs)
