"""The benchmark models, written with kiln.keras exactly as the classic Keras examples
(resnet20 with the functional API, as a Keras user writes it)."""

import numpy as np

from .. import keras
from ..keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from . import architectures


def mnist_cnn(data_format):
    """keras/examples/mnist_cnn.py: batch 128, 10 classes."""
    keras.backend.clear_session()  # layer names as in a fresh script: conv2d, conv2d_1, ...
    shape = (28, 28, 1) if data_format == "channels_last" else (1, 28, 28)
    model = keras.Sequential([
        Conv2D(32, (3, 3), activation="relu", input_shape=shape, data_format=data_format),
        Conv2D(64, (3, 3), activation="relu", data_format=data_format),
        MaxPooling2D((2, 2), data_format=data_format),
        Dropout(0.25),
        Flatten(data_format=data_format),
        Dense(128, activation="relu"),
        Dropout(0.5),
        Dense(10, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adadelta(),
                  metrics=["accuracy"])
    return model, shape, 128


def cifar10_cnn(data_format):
    """keras/examples/cifar10_cnn.py: batch 32, RMSprop(lr=1e-4, decay=1e-6)."""
    keras.backend.clear_session()
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    f = dict(data_format=data_format)
    model = keras.Sequential([
        Conv2D(32, (3, 3), padding="same", input_shape=shape, **f), Activation("relu"),
        Conv2D(32, (3, 3), **f), Activation("relu"),
        MaxPooling2D((2, 2), **f), Dropout(0.25),
        Conv2D(64, (3, 3), padding="same", **f), Activation("relu"),
        Conv2D(64, (3, 3), **f), Activation("relu"),
        MaxPooling2D((2, 2), **f), Dropout(0.25),
        Flatten(**f), Dense(512), Activation("relu"), Dropout(0.5),
        Dense(10), Activation("softmax"),
    ])
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.RMSprop(learning_rate=1e-4, decay=1e-6),
                  metrics=["accuracy"])
    return model, shape, 32


def resnet20(data_format):
    """keras/examples/cifar10_resnet.py, resnet_v1(depth=20): batch 128, Adam(1e-3)
    (architectures.resnet20, without the example's l2 regularizer)."""
    keras.backend.clear_session()
    model = architectures.resnet20(keras, data_format)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    return model, shape, 128


def mobilenet_v2(data_format):
    """Keras' MobileNetV2 topology (alpha 1.0) on 96x96x3, 10 classes, batch 32, Adam(1e-3)."""
    keras.backend.clear_session()
    model = architectures.mobilenet_v2(keras, data_format)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    shape = (96, 96, 3) if data_format == "channels_last" else (3, 96, 96)
    return model, shape, 32


def unet(data_format):
    """A small U-Net (architectures.unet) on 64x64x1, per-pixel sigmoid with binary
    cross-entropy, batch 32, Adam(1e-3)."""
    keras.backend.clear_session()
    model = architectures.unet(keras, data_format)
    model.compile(loss="binary_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    shape = (64, 64, 1) if data_format == "channels_last" else (1, 64, 64)
    return model, shape, 32


def imdb_lstm(data_format=None):
    """architectures.imdb_rnn with an LSTM: batch 32, Adam(1e-3), binary cross-entropy (a
    sequence model has no data format)."""
    keras.backend.clear_session()
    return _text_model(architectures.imdb_rnn(keras, "LSTM"))


def imdb_gru(data_format=None):
    """architectures.imdb_rnn with a GRU (reset_after=True, Keras 3's default)."""
    keras.backend.clear_session()
    return _text_model(architectures.imdb_rnn(keras, "GRU"))


def imdb_cnn(data_format=None):
    """keras/examples/imdb_cnn.py (architectures.imdb_cnn): batch 32, Adam(1e-3)."""
    keras.backend.clear_session()
    return _text_model(architectures.imdb_cnn(keras))


def transformer_encoder(data_format=None):
    """architectures.transformer_encoder: 4 post-norm blocks, width 256, 4 heads, feed-forward
    1024, 128 tokens, a 2-class softmax with categorical cross-entropy; batch 32, Adam(1e-3)."""
    keras.backend.clear_session()
    return _text_model(architectures.transformer_encoder(keras), "categorical_crossentropy")


SEQUENCE_LENGTHS = {"imdb_lstm": architectures.IMDB_RNN_SHAPE[1],
                    "imdb_gru": architectures.IMDB_RNN_SHAPE[1],
                    "imdb_cnn": architectures.IMDB_CNN_SHAPE[1],
                    "transformer_encoder": architectures.TRANSFORMER_SHAPE[1]}


def _text_model(model, loss="binary_crossentropy"):
    """(model, the token sequence's shape, batch 32), compiled as the examples compile."""
    model.compile(loss=loss, optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  metrics=["accuracy"])
    return model, (SEQUENCE_LENGTHS[model.name],), 32


def _application_model(model, data_format):
    """(model, image shape, batch 16) of a keras.applications model, compiled with
    categorical cross-entropy and Adam(1e-3)."""
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=1e-3), metrics=["accuracy"])
    return model, tuple(model.input.shape)[1:], APPLICATION_BATCH


APPLICATION_BATCH = 16


def resnet50(data_format):
    """kiln.keras.applications.ResNet50(weights=None), 224x224x3, 1000 classes, batch 16."""
    keras.backend.clear_session()
    return _application_model(architectures.resnet50(keras, data_format), data_format)


def efficientnet_b0(data_format):
    """kiln.keras.applications.EfficientNetB0(weights=None), 224x224x3, 1000 classes,
    batch 16."""
    keras.backend.clear_session()
    return _application_model(architectures.efficientnet_b0(keras, data_format), data_format)


def resnet50_finetune(data_format):
    """architectures.resnet50_finetune: a frozen ResNet50 base under a new 10-class head,
    batch 16; a training step trains the head only."""
    keras.backend.clear_session()
    return _application_model(architectures.resnet50_finetune(keras, data_format),
                              data_format)


MODELS = {"mnist_cnn": mnist_cnn, "cifar10_cnn": cifar10_cnn, "resnet20": resnet20,
          "mobilenet_v2": mobilenet_v2, "unet": unet, "imdb_lstm": imdb_lstm,
          "imdb_gru": imdb_gru, "imdb_cnn": imdb_cnn, "transformer_encoder": transformer_encoder,
          "resnet50": resnet50, "efficientnet_b0": efficientnet_b0,
          "resnet50_finetune": resnet50_finetune}
# no data format: timed once
SEQUENCE_MODELS = ("imdb_lstm", "imdb_gru", "imdb_cnn", "transformer_encoder")


def built(name, data_format="channels_last"):
    """(model, batch) with its weights made: a Sequential model is built here, a functional
    one already was when it was called on its inputs."""
    model, _, batch = MODELS[name](data_format)
    if not model.built:
        model.build()
    return model, batch


def output_shape(layer):
    """A layer's Keras output shape: `output_shape` (Sequential), else `output.shape` (the
    functional API, and Keras 3, which has no `output_shape`)."""
    shape = getattr(layer, "output_shape", None)
    if shape is None:
        shape = layer.output.shape
    return tuple(shape)


def _has_weights(layer):
    return any(getattr(layer, name, None) is not None for name in ("kernel", "embeddings",
                                                                    "cell"))


def _layer_forward_flops(layer, batch):
    """2 x multiply-adds of one conv, dense or recurrent layer's forward, or None."""
    cell = getattr(layer, "cell", None)
    if cell is not None and getattr(cell, "kernel", None) is not None:
        # every step: the input projection and the recurrent product, all gates
        steps = tuple(layer.input.shape)[1]
        return 2.0 * batch * steps * float(np.prod(cell.kernel.shape)
                                           + np.prod(cell.recurrent_kernel.shape))
    kernel = getattr(layer, "kernel", None)
    if kernel is None:
        return None
    forward = 2.0 * batch * np.prod(kernel.shape)
    out = output_shape(layer)
    if len(kernel.shape) >= 3:  # a convolution: a kernel's worth of work per output position
        spatial = len(kernel.shape) - 2
        channels_last = getattr(layer, "data_format", "channels_last") == "channels_last"
        forward *= np.prod(out[1:1 + spatial] if channels_last else out[2:2 + spatial])
    elif len(out) > 2:  # Dense on a sequence: once per step
        forward *= np.prod(out[1:-1])
    return float(forward)


def _attention_forward_flops(layer, batch):
    """A MultiHeadAttention layer's self-attention over T steps of d features (query, key and
    value the same tensor, output d features): (its four projections, the two batched
    matmuls of the scores and of their weighted sum of the values)."""
    _, steps, features = output_shape(layer)
    heads, key_dim = layer.num_heads, layer.key_dim
    value_dim = layer.value_dim or key_dim
    projections = 2.0 * batch * steps * features * heads * (2 * key_dim + 2 * value_dim)
    attention = 2.0 * batch * heads * steps * steps * (key_dim + value_dim)
    return float(projections), float(attention)


def _flat_layers(layers, trainable=True):
    """(layer, whether fit() trains it) of `layers`, a nested model's own layers in its place:
    a frozen base (`base.trainable = False`) freezes every layer inside it."""
    for layer in layers:
        trains = trainable and getattr(layer, "trainable", True)
        inner = getattr(layer, "layers", None)
        if isinstance(inner, list) and getattr(layer, "kernel", None) is None:
            yield from _flat_layers(inner, trains)
        else:
            yield layer, trains


def layer_passes(model, batch):
    """(forward flops, whether the backward computes the layer's input gradient, whether it
    computes its weights' gradient) of each conv, dense, recurrent and attention product of
    the model, nested models' layers included, in order. The input gradient is needed only
    behind a trainable weighted layer; a frozen layer (trainable=False, or inside a frozen
    model) has no weight gradient. A MultiHeadAttention layer counts as two entries: its
    projections and its attention products (whose batched matmuls pass gradients to both
    operands, the projections)."""
    passes, trainable_before = [], False
    for layer, trains in _flat_layers(model.layers):
        if type(layer).__name__ == "MultiHeadAttention":
            projections, attention = _attention_forward_flops(layer, batch)
            behind = trainable_before or trains  # a gradient reaches both operands
            passes += [(projections, trainable_before, trains), (attention, behind, behind)]
            trainable_before = behind
            continue
        forward = _layer_forward_flops(layer, batch)
        if forward is not None:
            passes.append((forward, trainable_before, trains))
        trainable_before = trainable_before or (trains and _has_weights(layer))
    return passes


def forward_flops_per_layer(model, batch, with_input_gradient=False):
    """2 x multiply-adds of the forward pass of each conv, dense and recurrent layer of the
    model (layer_passes: nested models' layers included; batch normalization, pooling, adds,
    activations and the gate arithmetic are not counted). With `with_input_gradient`,
    (flops, whether the layer's backward also computes its input's gradient: a trainable
    weighted layer, e.g. an Embedding, comes before it) pairs. A MultiHeadAttention layer
    counts as two entries: its projections and its attention products."""
    return [(forward, input_gradient) if with_input_gradient else forward
            for forward, input_gradient, _ in layer_passes(model, batch)]


def training_flops(model, batch):
    """Forward, backward-data (not for a layer with no trainable weighted layer before it) and
    backward-weights (not for a frozen layer): the work a training step must do, at batch 128:
    9.160 GFLOP for mnist_cnn, 31.231 for resnet20 (inference 10.448). A frozen base with
    nothing trainable before it costs its forward only."""
    return sum(forward * (1 + input_gradient + weight_gradient)
               for forward, input_gradient, weight_gradient in layer_passes(model, batch))


def inference_flops(model, batch):
    return sum(forward_flops_per_layer(model, batch))
