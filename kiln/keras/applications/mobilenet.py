"""`keras.applications.mobilenet`: MobileNet (Howard et al., 2017) as Keras 3 builds it
(keras/src/applications/mobilenet.py): a 3x3 convolution, then 13 depthwise separable blocks
(3x3 depthwise convolution, 1x1 pointwise convolution, each with BatchNormalization and
ReLU6); the classifier is a 1x1 convolution on the pooled features."""

import warnings

from .. import layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish, image_input

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet/"
IMAGENET_SIZES = (128, 160, 192, 224)
IMAGENET_ALPHAS = {1.0: "1_0", 0.75: "7_5", 0.50: "5_0", 0.25: "2_5"}
# (pointwise filters, strides) of blocks 1 to 13
BLOCKS = ([(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5
          + [(1024, 2), (1024, 1)])


def _bn_axis():
    """BatchNormalization's axis as Keras writes it: -1, or 1 for channels_first."""
    return 1 if channel_axis() == 1 else -1


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3,  # noqa: N802
              include_top=True, weights="imagenet", input_tensor=None, pooling=None,
              classes=1000, classifier_activation="softmax", name=None):
    """Instantiates the MobileNet architecture.

    Args (as Keras): input_shape, alpha (the width multiplier: 'imagenet' weights exist for
    0.25, 0.5, 0.75 and 1.0), depth_multiplier (of the depthwise convolutions: 1 with
    'imagenet' weights), dropout (before the classifier, default 0.001), include_top, weights
    (None, 'imagenet': Keras's file for this alpha and input size from the Keras cache, or a
    path), input_tensor, pooling, classes, classifier_activation, name (default
    'mobilenet_<alpha>_<rows>'). Inputs are scaled by `preprocess_input` to [-1, 1]."""
    who = name or "MobileNet"
    check_weights(weights, include_top, classes, who)
    channels_first = channel_axis() == 1
    default_size = 224
    if input_shape is not None:
        rows, cols = input_shape[1:3] if channels_first else input_shape[:2]
        if rows == cols and rows in IMAGENET_SIZES:
            default_size = rows
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, include_top,
                                         weights, who)
    rows, cols = input_shape[1:3] if channels_first else input_shape[:2]
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError(f"{who}: if imagenet weights are being loaded, depth_multiplier "
                             f"must be 1; got depth_multiplier={depth_multiplier}")
        if alpha not in IMAGENET_ALPHAS:
            raise ValueError(f"{who}: if imagenet weights are being loaded, alpha can be one "
                             f"of 0.25, 0.50, 0.75 or 1.0 only; got alpha={alpha}")
        if rows != cols or rows not in IMAGENET_SIZES:
            rows = 224
            warnings.warn("input_shape is undefined or non-square, or rows is not in "
                          "[128, 160, 192, 224]. Weights for input shape (224, 224) will be "
                          "loaded as the default.", stacklevel=2)

    x = _conv_block(img_input, 32, alpha, strides=(2, 2))
    for block_id, (filters, stride) in enumerate(BLOCKS, start=1):
        x = _depthwise_conv_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D()(x)

    if name is None:
        name = f"mobilenet_{alpha:0.2f}_{rows}"
    file_name = None
    if weights == "imagenet":
        suffix = "_tf.h5" if include_top else "_tf_no_top.h5"
        file_name = f"mobilenet_{IMAGENET_ALPHAS[alpha]}_{rows}{suffix}"
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHT_PATH)


def _conv_block(inputs, filters, alpha, kernel=(3, 3), strides=(1, 1)):
    """The first convolution (filters scaled by alpha), BatchNormalization and ReLU6."""
    x = layers.Conv2D(int(filters * alpha), kernel, padding="same", use_bias=False,
                      strides=strides, name="conv1")(inputs)
    x = layers.BatchNormalization(axis=_bn_axis(), name="conv1_bn")(x)
    return layers.ReLU(6.0, name="conv1_relu")(x)


def _depthwise_conv_block(inputs, pointwise_conv_filters, alpha, depth_multiplier=1,
                          strides=1, block_id=1):
    """Depthwise 3x3 (zero padded on the bottom and right when strided), pointwise 1x1, each
    followed by BatchNormalization and ReLU6."""
    bn_axis = _bn_axis()
    if strides == 1:
        x = inputs
    else:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(inputs)
    x = layers.DepthwiseConv2D((3, 3), padding="same" if strides == 1 else "valid",
                               depth_multiplier=depth_multiplier, strides=(strides, strides),
                               use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(int(pointwise_conv_filters * alpha), (1, 1), padding="same",
                      use_bias=False, strides=(1, 1), name=f"conv_pw_{block_id}")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


preprocess_input = imagenet_utils.module_preprocess_input("tf")
decode_predictions = imagenet_utils.decode_predictions
