"""A small conv model every profiler test uses: a Conv2D with its own relu, a Conv2D and an
Activation the plan fuses into it, max pooling, a view (Flatten) and a softmax Dense; an l2
penalty and a max-norm constraint so the update phase has all its parts."""

import numpy as np

from kiln import keras
from kiln.keras import layers

BATCH = 4
SHAPE = (8, 8, 2)
CLASSES = 3
# numbers the percentages are taken of, so the tests need not measure the machine
PEAKS = {"matmul_gflops": 10.0, "copy_gbps": 10.0}


def small_model(weights=None):
    model = keras.Sequential([
        layers.Conv2D(4, (3, 3), activation="relu", input_shape=SHAPE, name="conv_a",
                      kernel_regularizer=keras.regularizers.l2(1e-3)),
        layers.Conv2D(5, (3, 3), name="conv_b",
                      kernel_constraint=keras.constraints.MaxNorm(0.2)),
        layers.Activation("relu", name="relu_b"),
        layers.MaxPooling2D((2, 2), name="pool"),
        layers.Flatten(name="flat"),
        layers.Dense(CLASSES, activation="softmax", name="out"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="categorical_crossentropy")
    if weights is not None:
        model.set_weights(weights)
    return model


def data(samples=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, *SHAPE)).astype(np.float32)
    y = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, samples)]
    return x, y


def small_mobilenet():
    """An inverted-residual block with MobileNetV2's layer names (none of them starts with
    the Keras class name): a stem Conv2D, a depthwise conv, a 1x1 projection, each with its
    BatchNormalization, relu6 activations, a residual Add, global pooling and a Dense."""
    inputs = keras.Input((8, 8, 3), name="input")
    x = layers.Conv2D(4, 3, padding="same", use_bias=False, name="Conv1")(inputs)
    x = layers.BatchNormalization(name="bn_Conv1")(x)
    stem = layers.ReLU(6.0, name="Conv1_relu")(x)
    x = layers.DepthwiseConv2D(3, padding="same", use_bias=False,
                               name="block_1_depthwise")(stem)
    x = layers.BatchNormalization(name="block_1_depthwise_BN")(x)
    x = layers.ReLU(6.0, name="block_1_depthwise_relu")(x)
    x = layers.Conv2D(4, 1, use_bias=False, name="block_1_project")(x)
    x = layers.BatchNormalization(name="block_1_project_BN")(x)
    x = layers.Add(name="block_1_add")([stem, x])
    x = layers.GlobalAveragePooling2D(name="global_average_pooling2d")(x)
    outputs = layers.Dense(CLASSES, activation="softmax", name="Logits")(x)
    model = keras.Model(inputs, outputs, name="small_mobilenet")
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    return model
