"""`keras.applications.mobilenet_v2`: MobileNetV2 (Sandler et al., 2018) as Keras 3 builds it
(keras/src/applications/mobilenet_v2.py): inverted residual blocks of a 1x1 expansion, a 3x3
depthwise convolution and a 1x1 linear projection, with ReLU6 and BatchNormalization."""

import warnings

from .. import backend, layers
from . import imagenet_utils
from .application_builder import check_weights, finish, image_input, top
from .imagenet_utils import correct_pad

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
IMAGENET_SIZES = (96, 128, 160, 192, 224)
IMAGENET_ALPHAS = (0.35, 0.50, 0.75, 1.0, 1.3, 1.4)
# (filters, stride, expansion) of blocks 0 to 16
BLOCKS = ([(16, 1, 1)] + [(24, 2, 6), (24, 1, 6)] + [(32, 2, 6)] + [(32, 1, 6)] * 2
          + [(64, 2, 6)] + [(64, 1, 6)] * 3 + [(96, 1, 6)] * 3 + [(160, 2, 6)]
          + [(160, 1, 6)] * 2 + [(320, 1, 6)])


def _default_size(input_shape, input_tensor):
    """Keras's: the input's rows when square and one of the ImageNet sizes, else 224."""
    if input_shape is None and input_tensor is None:
        return 224
    channels_first = backend.image_data_format() == "channels_first"
    if input_shape is not None:
        rows, cols = input_shape[1:3] if channels_first else input_shape[:2]
    else:
        rows, cols = input_tensor.shape[2:4] if channels_first else input_tensor.shape[1:3]
    return rows if rows == cols and rows in IMAGENET_SIZES else 224


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True,  # noqa: N802
                weights="imagenet", input_tensor=None, pooling=None, classes=1000,
                classifier_activation="softmax", name=None):
    """Instantiates the MobileNetV2 architecture.

    Args (as Keras): input_shape, alpha (the width multiplier: 'imagenet' weights exist for
    0.35, 0.5, 0.75, 1.0, 1.3 and 1.4), include_top, weights (None, 'imagenet': Keras's file
    for this alpha and input size from the Keras cache, or a path), input_tensor, pooling,
    classes, classifier_activation, name (default 'mobilenetv2_<alpha>_<rows>')."""
    who = name or "MobileNetV2"
    check_weights(weights, include_top, classes, who)
    default_size = _default_size(input_shape, input_tensor)
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, include_top,
                                         weights, who)
    channels_first = backend.image_data_format() == "channels_first"
    rows, cols = input_shape[1:3] if channels_first else input_shape[:2]
    if weights == "imagenet":
        if alpha not in IMAGENET_ALPHAS:
            raise ValueError(f"{who}: if imagenet weights are being loaded, alpha must be one "
                             f"of 0.35, 0.50, 0.75, 1.0, 1.3 or 1.4; got alpha={alpha}")
        if rows != cols or rows not in IMAGENET_SIZES:
            rows = 224
            warnings.warn("input_shape is undefined or non-square, or rows is not in "
                          "[96, 128, 160, 192, 224]. Weights for input shape (224, 224) will "
                          "be loaded as the default.", stacklevel=2)
    bn_axis = 1 if channels_first else -1

    x = layers.Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2),
                      padding="same", use_bias=False, name="Conv1")(img_input)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=1e-3, momentum=0.999,
                                  name="bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id)
    last_block_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_block_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=1e-3, momentum=0.999,
                                  name="Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights,
            names=(None, None))

    if name is None:
        name = f"mobilenetv2_{alpha:0.2f}_{rows}"
    suffix = f"_{float(alpha)}_{rows}.h5" if include_top else f"_{float(alpha)}_{rows}_no_top.h5"
    file_name = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels" + suffix
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHT_PATH)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    channels_first = backend.image_data_format() == "channels_first"
    bn_axis = 1 if channels_first else -1
    in_channels = inputs.shape[bn_axis]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"

    def batch_norm(x, name):
        return layers.BatchNormalization(axis=bn_axis, epsilon=1e-3, momentum=0.999,
                                         name=name)(x)

    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same",
                          use_bias=False, activation=None, name=f"{prefix}expand")(x)
        x = batch_norm(x, f"{prefix}expand_BN")
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=f"{prefix}depthwise")(x)
    x = batch_norm(x, f"{prefix}depthwise_BN")
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                      activation=None, name=f"{prefix}project")(x)
    x = batch_norm(x, f"{prefix}project_BN")
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


preprocess_input = imagenet_utils.module_preprocess_input("tf")
decode_predictions = imagenet_utils.decode_predictions
