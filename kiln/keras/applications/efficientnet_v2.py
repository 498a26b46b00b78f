"""`keras.applications.efficientnet_v2`: EfficientNetV2B0 to B3, S, M and L (Tan & Le, 2021)
as Keras 3 builds them (keras/src/applications/efficientnet_v2.py). The early stages are
FusedMBConv blocks (one full kxk convolution in place of the 1x1 expansion and the depthwise
convolution), the later ones MBConv blocks with squeeze-and-excitation; stochastic depth is a
Dropout with noise_shape (None, 1, 1, 1) before each residual add. The input preprocessing is
part of the model: Rescaling(1/255) and a Normalization by ImageNet's mean and variance for
the B variants, Rescaling(1/128, offset=-1) for S, M and L (`include_preprocessing=False`
leaves it out)."""

import copy
import math

from .. import initializers, layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish, image_input, top

BASE_WEIGHTS_PATH = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                     "efficientnet_v2/")
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling", "config": {
    "scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling", "config": {
    "scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}


def _stages(*rows):
    """Keras's block arguments from rows of (conv_type (1: FusedMBConv, 0: MBConv), repeats,
    filters in, filters out, expansion, squeeze-excite ratio, strides); kernels are 3x3."""
    return [{"kernel_size": 3, "num_repeat": repeats, "input_filters": filters_in,
             "output_filters": filters_out, "expand_ratio": expand, "se_ratio": se,
             "strides": strides, "conv_type": conv_type}
            for conv_type, repeats, filters_in, filters_out, expand, se, strides in rows]


B_BLOCKS = _stages((1, 1, 32, 16, 1, 0, 1), (1, 2, 16, 32, 4, 0, 2), (1, 2, 32, 48, 4, 0, 2),
                   (0, 3, 48, 96, 4, 0.25, 2), (0, 5, 96, 112, 6, 0.25, 1),
                   (0, 8, 112, 192, 6, 0.25, 2))
DEFAULT_BLOCKS_ARGS = {
    "efficientnetv2-s": _stages((1, 2, 24, 24, 1, 0, 1), (1, 4, 24, 48, 4, 0, 2),
                                (1, 4, 48, 64, 4, 0, 2), (0, 6, 64, 128, 4, 0.25, 2),
                                (0, 9, 128, 160, 6, 0.25, 1), (0, 15, 160, 256, 6, 0.25, 2)),
    "efficientnetv2-m": _stages((1, 3, 24, 24, 1, 0, 1), (1, 5, 24, 48, 4, 0, 2),
                                (1, 5, 48, 80, 4, 0, 2), (0, 7, 80, 160, 4, 0.25, 2),
                                (0, 14, 160, 176, 6, 0.25, 1), (0, 18, 176, 304, 6, 0.25, 2),
                                (0, 5, 304, 512, 6, 0.25, 1)),
    "efficientnetv2-l": _stages((1, 4, 32, 32, 1, 0, 1), (1, 7, 32, 64, 4, 0, 2),
                                (1, 7, 64, 96, 4, 0, 2), (0, 10, 96, 192, 4, 0.25, 2),
                                (0, 19, 192, 224, 6, 0.25, 1), (0, 25, 224, 384, 6, 0.25, 2),
                                (0, 7, 384, 640, 6, 0.25, 1)),
    **{f"efficientnetv2-b{i}": B_BLOCKS for i in range(4)},
}


def round_filters(filters, width_coefficient, min_depth, depth_divisor):
    """The filters scaled by `width_coefficient`, rounded to a multiple of the divisor."""
    filters *= width_coefficient
    minimum_depth = min_depth or depth_divisor
    new_filters = max(minimum_depth,
                      int(filters + depth_divisor / 2) // depth_divisor * depth_divisor)
    return int(new_filters)


def round_repeats(repeats, depth_coefficient):
    return int(math.ceil(depth_coefficient * repeats))


def EfficientNetV2(width_coefficient, depth_coefficient, default_size,  # noqa: N802
                   dropout_rate=0.2, drop_connect_rate=0.2, depth_divisor=8, min_depth=8,
                   bn_momentum=0.9, activation="swish", blocks_args="default",
                   name="efficientnetv2", include_top=True, weights="imagenet",
                   input_tensor=None, input_shape=None, pooling=None, classes=1000,
                   classifier_activation="softmax", include_preprocessing=True,
                   weights_name=None):
    """The EfficientNetV2 builder: `width_coefficient` scales the filters, `depth_coefficient`
    the repeats of each stage; `blocks_args` "default" takes the stages of the variant
    `name` names (as Keras); `dropout_rate` before the classifier, `drop_connect_rate` the
    stochastic depth of the last block (linearly less for earlier ones)."""
    if blocks_args == "default":
        if name not in DEFAULT_BLOCKS_ARGS:
            raise ValueError(f"EfficientNetV2: blocks_args='default' takes the stages of the "
                             f"variant the name names, one of {sorted(DEFAULT_BLOCKS_ARGS)}; "
                             f"got name={name!r}")
        blocks_args = DEFAULT_BLOCKS_ARGS[name]
    check_weights(weights, include_top, classes, name)
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, include_top,
                                         weights, name)
    bn_axis = channel_axis()

    x = img_input
    if include_preprocessing:
        num_channels = input_shape[bn_axis - 1]
        if name.split("-")[-1].startswith("b") and num_channels == 3:
            x = layers.Rescaling(scale=1.0 / 255)(x)
            x = layers.Normalization(mean=[0.485, 0.456, 0.406],
                                     variance=[0.229**2, 0.224**2, 0.225**2], axis=bn_axis)(x)
        else:
            x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)

    def rounded(filters):
        return round_filters(filters, width_coefficient, min_depth, depth_divisor)

    x = layers.Conv2D(rounded(blocks_args[0]["input_filters"]), kernel_size=3, strides=2,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same",
                      use_bias=False, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, momentum=bn_momentum, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)

    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(args["num_repeat"] for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["num_repeat"] <= 0:
            raise ValueError(f"{name}: the number of repeats in EfficientNetV2 must be > 0, "
                             f"got num_repeat={args['num_repeat']}")
        args["input_filters"] = rounded(args["input_filters"])
        args["output_filters"] = rounded(args["output_filters"])
        block = {0: MBConvBlock, 1: FusedMBConvBlock}[args.pop("conv_type")]
        for j in range(round_repeats(args.pop("num_repeat"), depth_coefficient)):
            if j > 0:
                args["strides"] = 1
                args["input_filters"] = args["output_filters"]
            x = block(activation=activation, bn_momentum=bn_momentum,
                      survival_probability=drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)(x)
            b += 1

    x = layers.Conv2D(rounded(1280), kernel_size=1, strides=1,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same",
                      use_bias=False, name="top_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, momentum=bn_momentum, name="top_bn")(x)
    x = layers.Activation(activation=activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=DENSE_KERNEL_INITIALIZER,
                         bias_initializer=initializers.Constant(0.0), name="predictions")(x)
    else:
        x = top(x, False, pooling, classes, classifier_activation, weights)
    file_name = name + (".h5" if include_top else "_notop.h5")
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


def _batch_norm(x, momentum, name):
    return layers.BatchNormalization(axis=channel_axis(), momentum=momentum, name=name)(x)


def _conv(filters, kernel_size, name, strides=1, **kwargs):
    return layers.Conv2D(filters, kernel_size=kernel_size, strides=strides,
                         kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same",
                         use_bias=False, name=name, **kwargs)


def _squeeze_excite(x, input_filters, filters, se_ratio, activation, name):
    filters_se = max(1, int(input_filters * se_ratio))
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se_shape = (filters, 1, 1) if channel_axis() == 1 else (1, 1, filters)
    se = layers.Reshape(se_shape, name=f"{name}se_reshape")(se)
    se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                       kernel_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                       kernel_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}se_expand")(se)
    return layers.multiply([x, se], name=f"{name}se_excite")


def _residual(x, inputs, survival_probability, name):
    """Stochastic depth (a Dropout of rate `survival_probability`, as Keras names it) and the
    residual add."""
    if survival_probability:
        x = layers.Dropout(survival_probability, noise_shape=(None, 1, 1, 1),
                           name=f"{name}drop")(x)
    return layers.add([x, inputs], name=f"{name}add")


def MBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3,  # noqa: N802
                strides=1, se_ratio=0.0, bn_momentum=0.9, activation="swish",
                survival_probability=0.8, name=None):
    """1x1 expansion, depthwise convolution, squeeze-and-excitation, 1x1 projection, and (same
    shape) stochastic depth and the residual add. Returns the function applying it."""
    def apply(inputs):
        filters = input_filters * expand_ratio
        x = inputs
        if expand_ratio != 1:
            x = _conv(filters, 1, f"{name}expand_conv")(inputs)
            x = _batch_norm(x, bn_momentum, f"{name}expand_bn")
            x = layers.Activation(activation, name=f"{name}expand_activation")(x)
        x = layers.DepthwiseConv2D(kernel_size=kernel_size, strides=strides,
                                   depthwise_initializer=CONV_KERNEL_INITIALIZER,
                                   padding="same", use_bias=False, name=f"{name}dwconv2")(x)
        x = _batch_norm(x, bn_momentum, f"{name}bn")
        x = layers.Activation(activation, name=f"{name}activation")(x)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, input_filters, filters, se_ratio, activation, name)
        x = _conv(output_filters, 1, f"{name}project_conv")(x)
        x = _batch_norm(x, bn_momentum, f"{name}project_bn")
        if strides == 1 and input_filters == output_filters:
            x = _residual(x, inputs, survival_probability, name)
        return x

    return apply


def FusedMBConvBlock(input_filters, output_filters, expand_ratio=1,  # noqa: N802
                     kernel_size=3, strides=1, se_ratio=0.0, bn_momentum=0.9,
                     activation="swish", survival_probability=0.8, name=None):
    """One kxk expansion convolution (strided), squeeze-and-excitation, a 1x1 projection;
    without expansion the projection is the kxk convolution, with its activation. Returns
    the function applying it."""
    def apply(inputs):
        filters = input_filters * expand_ratio
        x = inputs
        if expand_ratio != 1:
            x = _conv(filters, kernel_size, f"{name}expand_conv", strides)(inputs)
            x = _batch_norm(x, bn_momentum, f"{name}expand_bn")
            x = layers.Activation(activation=activation, name=f"{name}expand_activation")(x)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, input_filters, filters, se_ratio, activation, name)
        expanded = expand_ratio != 1
        x = _conv(output_filters, 1 if expanded else kernel_size, f"{name}project_conv",
                  1 if expanded else strides)(x)
        x = _batch_norm(x, bn_momentum, f"{name}project_bn")
        if not expanded:
            x = layers.Activation(activation=activation, name=f"{name}project_activation")(x)
        if strides == 1 and input_filters == output_filters:
            x = _residual(x, inputs, survival_probability, name)
        return x

    return apply


# (width, depth, default size) of each variant and its key in Keras's weight hashes
SCALING = {"B0": (1.0, 1.0, 224, "b0"), "B1": (1.0, 1.1, 240, "b1"),
           "B2": (1.1, 1.2, 260, "b2"), "B3": (1.2, 1.4, 300, "b3"),
           "S": (1.0, 1.0, 384, "-s"), "M": (1.0, 1.0, 480, "-m"), "L": (1.0, 1.0, 480, "-l")}


def _variant(key):
    width, depth, size, weights_name = SCALING[key]
    model_name = f"efficientnetv2-{key.lower()}"

    def builder(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                include_preprocessing=True, name=model_name):
        return EfficientNetV2(width_coefficient=width, depth_coefficient=depth,
                              default_size=size, name=name, include_top=include_top,
                              weights=weights, input_tensor=input_tensor,
                              input_shape=input_shape, pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation,
                              include_preprocessing=include_preprocessing,
                              weights_name=weights_name)

    builder.__name__ = builder.__qualname__ = f"EfficientNetV2{key}"
    builder.__doc__ = (f"Instantiates the EfficientNetV2{key} architecture (input {size}x{size} "
                       "by default). Args (as Keras): include_top, weights (None, 'imagenet': "
                       "Keras's file from the Keras cache, or a path), input_tensor, "
                       "input_shape, pooling, classes, classifier_activation, "
                       "include_preprocessing (inputs are pixels in [0, 255] and the model "
                       "rescales them; False: the inputs are fed as they are), name.")
    return builder


EfficientNetV2B0 = _variant("B0")
EfficientNetV2B1 = _variant("B1")
EfficientNetV2B2 = _variant("B2")
EfficientNetV2B3 = _variant("B3")
EfficientNetV2S = _variant("S")
EfficientNetV2M = _variant("M")
EfficientNetV2L = _variant("L")


preprocess_input = imagenet_utils.module_preprocess_input(None)
decode_predictions = imagenet_utils.decode_predictions
