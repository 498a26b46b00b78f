"""`keras.applications.efficientnet`: EfficientNetB0 to B7 (Tan & Le, 2019), one builder
scaled in width, depth and input size, as Keras 3 builds it
(keras/src/applications/efficientnet.py). The input preprocessing is part of the model:
Rescaling(1/255), a Normalization whose mean and variance are weights (loaded with the
ImageNet file), and with 'imagenet' weights a per-channel Rescaling; stochastic depth is a
Dropout with noise_shape (None, 1, 1, 1) before each residual add."""

import copy
import math

from .. import layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish, image_input, top
from .imagenet_utils import correct_pad

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/keras-applications/"
IMAGENET_STDDEV_RGB = [0.229, 0.224, 0.225]


def _stage(kernel_size, repeats, filters_in, filters_out, strides):
    return {"kernel_size": kernel_size, "repeats": repeats, "filters_in": filters_in,
            "filters_out": filters_out, "expand_ratio": 1 if filters_in == 32 else 6,
            "id_skip": True, "strides": strides, "se_ratio": 0.25}


DEFAULT_BLOCKS_ARGS = [_stage(3, 1, 32, 16, 1), _stage(3, 2, 16, 24, 2), _stage(5, 2, 24, 40, 2),
                       _stage(3, 3, 40, 80, 2), _stage(5, 3, 80, 112, 1),
                       _stage(5, 4, 112, 192, 2), _stage(3, 1, 192, 320, 1)]
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling", "config": {
    "scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling", "config": {
    "scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}


def EfficientNet(width_coefficient, depth_coefficient, default_size,  # noqa: N802
                 dropout_rate=0.2, drop_connect_rate=0.2, depth_divisor=8, activation="swish",
                 blocks_args="default", name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                 classes=1000, classifier_activation="softmax", weights_name=None):
    """The EfficientNet builder: `width_coefficient` scales the filters, `depth_coefficient`
    the repeats of each stage; `dropout_rate` before the classifier, `drop_connect_rate` the
    stochastic depth of the last block (linearly less for earlier ones)."""
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS
    check_weights(weights, include_top, classes, name)
    img_input, _ = image_input(input_tensor, input_shape, default_size, include_top, weights,
                               name)
    bn_axis = channel_axis()

    def round_filters(filters, divisor=depth_divisor):
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:
            new_filters += divisor
        return int(new_filters)

    def round_repeats(repeats):
        return int(math.ceil(depth_coefficient * repeats))

    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=bn_axis)(x)
    if weights == "imagenet":
        x = layers.Rescaling([1.0 / math.sqrt(stddev) for stddev in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)

    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["repeats"] <= 0:
            raise ValueError(f"{name}: the number of repeats in EfficientNet must be > 0, got "
                             f"repeats={args['repeats']}")
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1

    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="top_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=DENSE_KERNEL_INITIALIZER, name="predictions")(x)
    else:
        x = top(x, False, pooling, classes, classifier_activation, weights)
    file_name = name + (".h5" if include_top else "_notop.h5")
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32, filters_out=16,
          kernel_size=3, strides=1, expand_ratio=1, se_ratio=0.0, id_skip=True):
    """The MBConv block: 1x1 expansion, depthwise convolution, squeeze-and-excitation, 1x1
    projection, and (same shape) stochastic depth and the residual add."""
    bn_axis = channel_axis()
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False,
                          kernel_initializer=CONV_KERNEL_INITIALIZER,
                          name=f"{name}expand_conv")(inputs)
        x = layers.BatchNormalization(axis=bn_axis, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    else:
        x = inputs
    if strides == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size),
                                 name=f"{name}dwconv_pad")(x)
        conv_pad = "valid"
    else:
        conv_pad = "same"
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding=conv_pad, use_bias=False,
                               depthwise_initializer=CONV_KERNEL_INITIALIZER,
                               name=f"{name}dwconv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=f"{name}bn")(x)
    x = layers.Activation(activation, name=f"{name}activation")(x)

    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
        se_shape = (filters, 1, 1) if bn_axis == 1 else (1, 1, filters)
        se = layers.Reshape(se_shape, name=f"{name}se_reshape")(se)
        se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                           kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=f"{name}se_reduce")(se)
        se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                           kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=f"{name}se_expand")(se)
        x = layers.multiply([x, se], name=f"{name}se_excite")

    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER,
                      name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=f"{name}project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.add([x, inputs], name=f"{name}add")
    return x


# (width, depth, default size, dropout) of B0 to B7, as Keras
SCALING = {"b0": (1.0, 1.0, 224, 0.2), "b1": (1.0, 1.1, 240, 0.2), "b2": (1.1, 1.2, 260, 0.3),
           "b3": (1.2, 1.4, 300, 0.3), "b4": (1.4, 1.8, 380, 0.4), "b5": (1.6, 2.2, 456, 0.4),
           "b6": (1.8, 2.6, 528, 0.5), "b7": (2.0, 3.1, 600, 0.5)}


def _variant(key):
    width, depth, size, dropout = SCALING[key]

    def builder(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name=f"efficientnet{key}"):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top,
                            weights=weights, input_tensor=input_tensor,
                            input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, weights_name=key)

    builder.__name__ = builder.__qualname__ = f"EfficientNet{key.upper()}"
    builder.__doc__ = (f"Instantiates the EfficientNet{key.upper()} architecture (input "
                       f"{size}x{size} by default). Args (as Keras): include_top, weights "
                       "(None, 'imagenet': Keras's file from the Keras cache, or a path), "
                       "input_tensor, input_shape, pooling, classes, classifier_activation, "
                       "name. Inputs are pixels in [0, 255]: the model rescales them.")
    return builder


EfficientNetB0 = _variant("b0")
EfficientNetB1 = _variant("b1")
EfficientNetB2 = _variant("b2")
EfficientNetB3 = _variant("b3")
EfficientNetB4 = _variant("b4")
EfficientNetB5 = _variant("b5")
EfficientNetB6 = _variant("b6")
EfficientNetB7 = _variant("b7")


preprocess_input = imagenet_utils.module_preprocess_input(None)
decode_predictions = imagenet_utils.decode_predictions
