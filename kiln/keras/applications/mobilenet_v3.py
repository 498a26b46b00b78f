"""`keras.applications.mobilenet_v3`: MobileNetV3Small and MobileNetV3Large (Howard et al.,
2019) as Keras 3 builds them (keras/src/applications/mobilenet_v3.py): inverted residual
blocks with hard-swish or ReLU, squeeze-and-excitation gated by a hard sigmoid
(`ReLU(6)(x + 3) * (1 / 6)`, two `keras.ops` on the tensor, as Keras writes it) and a
`Multiply`; the input preprocessing (Rescaling to [-1, 1]) is part of the model unless
`include_preprocessing=False`. The "minimalistic" models drop the squeeze-and-excitation,
hard-swish and 5x5 kernels."""

import warnings

from ...graph.symbolic import SymbolicTensor
from .. import layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/"

# (expansion, filters, kernel size ("k": 5, or 3 when minimalistic), stride, squeeze-excite,
# activation ("hs": hard-swish, or ReLU when minimalistic)) of each block, as Keras's stack_fn
SMALL_BLOCKS = [(1, 16, 3, 2, True, "relu"), (72.0 / 16, 24, 3, 2, False, "relu"),
                (88.0 / 24, 24, 3, 1, False, "relu"), (4, 40, "k", 2, True, "hs"),
                (6, 40, "k", 1, True, "hs"), (6, 40, "k", 1, True, "hs"),
                (3, 48, "k", 1, True, "hs"), (3, 48, "k", 1, True, "hs"),
                (6, 96, "k", 2, True, "hs"), (6, 96, "k", 1, True, "hs"),
                (6, 96, "k", 1, True, "hs")]
LARGE_BLOCKS = [(1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"),
                (3, 24, 3, 1, False, "relu"), (3, 40, "k", 2, True, "relu"),
                (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
                (6, 80, 3, 2, False, "hs"), (2.5, 80, 3, 1, False, "hs"),
                (2.3, 80, 3, 1, False, "hs"), (2.3, 80, 3, 1, False, "hs"),
                (6, 112, 3, 1, True, "hs"), (6, 112, 3, 1, True, "hs"),
                (6, 160, "k", 2, True, "hs"), (6, 160, "k", 1, True, "hs"),
                (6, 160, "k", 1, True, "hs")]


def MobileNetV3(blocks, last_point_ch, input_shape=None, alpha=1.0,  # noqa: N802
                model_type="large", minimalistic=False, include_top=True, weights="imagenet",
                input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2,
                classifier_activation="softmax", include_preprocessing=True, name=None):
    """The MobileNetV3 builder: `blocks` as SMALL_BLOCKS, `last_point_ch` the width of the
    classifier's hidden 1x1 convolution."""
    who = name or "MobileNetV3"
    check_weights(weights, include_top, classes, who)
    img_input, input_shape = _image_input(input_tensor, input_shape, who)
    bn_axis = 1 if channel_axis() == 1 else -1
    rows, cols = input_shape[1:3] if bn_axis == 1 else input_shape[:2]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"{who}: input size must be at least 32x32; got "
                         f"input_shape={input_shape}")
    if weights == "imagenet":
        if (not minimalistic and alpha not in (0.75, 1.0)) or (minimalistic and alpha != 1.0):
            raise ValueError(f"{who}: if imagenet weights are being loaded, alpha can be one of "
                             "0.75, 1.0 for non minimalistic or 1.0 for minimalistic only; "
                             f"got alpha={alpha}, minimalistic={minimalistic}")
        if rows != cols or rows != 224:
            warnings.warn("input_shape is undefined or non-square, or rows is not 224. Weights "
                          "for input shape (224, 224) will be loaded as the default.",
                          stacklevel=3)
    kernel, activation, se_ratio = (3, relu, None) if minimalistic else (5, hard_swish, 0.25)

    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="conv")(x)
    x = _batch_norm(x, "conv_bn")
    x = activation(x)
    for block_id, (expansion, filters, size, stride, se, act) in enumerate(blocks):
        x = _inverted_res_block(x, expansion, _depth(filters * alpha),
                                kernel if size == "k" else size, stride,
                                se_ratio if se else None, activation if act == "hs" else relu,
                                block_id)
    last_conv_ch = _depth(x.shape[bn_axis] * 6)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False,
                      name="conv_1")(x)
    x = _batch_norm(x, "conv_1_bn")
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True,
                          name="conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="logits")(x)
        x = layers.Flatten()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D(name="max_pool")(x)

    file_name = None
    if weights == "imagenet":
        minimal = "_minimalistic" if minimalistic else ""
        model_name = f"{model_type}{minimal}_224_{alpha}_float"
        suffix = ".h5" if include_top else "_no_top_v2.h5"
        file_name = f"weights_mobilenet_v3_{model_name}{suffix}"
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHT_PATH)


def _image_input(input_tensor, input_shape, who):
    """(the tensor the network starts from, input_shape) by MobileNetV3's own rules: no
    default size (any input of at least 32x32), the shape of `input_tensor` when
    `input_shape` is not given, and both must agree when both are."""
    channels_first = channel_axis() == 1
    if input_tensor is not None and not isinstance(input_tensor, SymbolicTensor):
        raise ValueError(f"{who}: argument input_tensor must be a kiln.keras tensor "
                         "(keras.Input(...) or a layer's output), got "
                         f"{type(input_tensor).__name__}")
    if input_shape is not None and input_tensor is not None:
        axis = 1 if channels_first else 2
        if input_tensor.shape[axis] != input_shape[1]:
            raise ValueError(f"{who}: input_shape[1] must equal input_tensor.shape[{axis}]; got "
                             f"input_shape={input_shape}, input_tensor.shape="
                             f"{input_tensor.shape}")
    if input_shape is None and input_tensor is not None:
        # Keras's order, (cols, rows): the same for the square inputs the weights are for
        if channels_first:
            input_shape = (3, input_tensor.shape[3], input_tensor.shape[2])
        else:
            input_shape = (input_tensor.shape[2], input_tensor.shape[1], 3)
    if input_shape is None:
        input_shape = (3, None, None) if channels_first else (None, None, 3)
    img_input = layers.Input(shape=input_shape) if input_tensor is None else input_tensor
    return img_input, tuple(input_shape)


def _variant(model_type, blocks, last_point_ch):
    model_name = f"MobileNetV3{model_type.capitalize()}"

    def builder(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,
                weights="imagenet", input_tensor=None, classes=1000, pooling=None,
                dropout_rate=0.2, classifier_activation="softmax", include_preprocessing=True,
                name=model_name):
        return MobileNetV3(blocks, last_point_ch, input_shape, alpha, model_type, minimalistic,
                           include_top, weights, input_tensor, classes, pooling, dropout_rate,
                           classifier_activation, include_preprocessing, name=name)

    builder.__name__ = builder.__qualname__ = model_name
    builder.__doc__ = (
        f"Instantiates the {builder.__name__} architecture. Args (as Keras): input_shape "
        "(any size of at least 32x32; default (None, None, 3)), alpha (the width multiplier: "
        "'imagenet' weights exist for 0.75 and 1.0, 1.0 only when minimalistic), "
        "minimalistic, include_top, weights (None, 'imagenet': Keras's file from the Keras "
        "cache, or a path), input_tensor, classes, pooling, dropout_rate (before the "
        "classifier), classifier_activation, include_preprocessing (a Rescaling of pixels in "
        "[0, 255] to [-1, 1]; without it the inputs must already be in [-1, 1]), name.")
    return builder


MobileNetV3Small = _variant("small", SMALL_BLOCKS, 1024)
MobileNetV3Large = _variant("large", LARGE_BLOCKS, 1280)


def relu(x):
    return layers.ReLU()(x)


def hard_sigmoid(x):
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def hard_swish(x):
    return layers.Activation("hard_swish")(x)


def _depth(v, divisor=8, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _batch_norm(x, name):
    axis = 1 if channel_axis() == 1 else -1
    return layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999, name=name)(x)


def _se_block(inputs, filters, se_ratio, prefix):
    x = layers.GlobalAveragePooling2D(keepdims=True,
                                      name=f"{prefix}squeeze_excite_avg_pool")(inputs)
    x = layers.Conv2D(_depth(filters * se_ratio), kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv")(x)
    x = layers.ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, x])


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation,
                        block_id):
    bn_axis = 1 if channel_axis() == 1 else -1
    shortcut = x
    prefix = "expanded_conv_"
    infilters = x.shape[bn_axis]
    if block_id:
        prefix = f"expanded_conv_{block_id}_"
        x = layers.Conv2D(_depth(infilters * expansion), kernel_size=1, padding="same",
                          use_bias=False, name=f"{prefix}expand")(x)
        x = _batch_norm(x, f"{prefix}expand_bn")
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"{prefix}depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding="same" if stride == 1 else "valid", use_bias=False,
                               name=f"{prefix}depthwise")(x)
    x = _batch_norm(x, f"{prefix}depthwise_bn")
    x = activation(x)
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion), se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False,
                      name=f"{prefix}project")(x)
    x = _batch_norm(x, f"{prefix}project_bn")
    if stride == 1 and infilters == filters:
        x = layers.Add(name=f"{prefix}add")([shortcut, x])
    return x


preprocess_input = imagenet_utils.module_preprocess_input(None)
decode_predictions = imagenet_utils.decode_predictions
