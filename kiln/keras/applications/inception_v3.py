"""`keras.applications.inception_v3`: InceptionV3 (Szegedy et al., 2016), layer by layer as
Keras 3 builds it (keras/src/applications/inception_v3.py): convolution + BatchNormalization
(no scale) + relu units with Keras's automatic names, concatenated into the 'mixed0' to
'mixed10' modules, so Keras's weight files load. Inputs at least 75x75."""

from .. import layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish, image_input
from .xception import pooled_top

BASE_WEIGHTS_PATH = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                     "inception_v3/")


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """Conv2D (no bias), BatchNormalization (scale=False), relu; with `name`: the layers
    '<name>_conv', '<name>_bn' and '<name>'."""
    conv_name, bn_name = (None, None) if name is None else (f"{name}_conv", f"{name}_bn")
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding,
                      use_bias=False, name=conv_name)(x)
    x = layers.BatchNormalization(axis=channel_axis(), scale=False, name=bn_name)(x)
    return layers.Activation("relu", name=name)(x)


def _average_branch(x, filters):
    branch_pool = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(branch_pool, filters, 1, 1)


def _module_a(x, pool_filters, name):
    branch1x1 = conv2d_bn(x, 64, 1, 1)
    branch5x5 = conv2d_bn(x, 48, 1, 1)
    branch5x5 = conv2d_bn(branch5x5, 64, 5, 5)
    branch3x3dbl = conv2d_bn(x, 64, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
    branch_pool = _average_branch(x, pool_filters)
    return layers.concatenate([branch1x1, branch5x5, branch3x3dbl, branch_pool],
                              axis=channel_axis(), name=name)


def _module_c(x, filters, name):
    """The 17x17 module with factorized 7x7 convolutions (`filters` inside the branches)."""
    branch1x1 = conv2d_bn(x, 192, 1, 1)
    branch7x7 = conv2d_bn(x, filters, 1, 1)
    branch7x7 = conv2d_bn(branch7x7, filters, 1, 7)
    branch7x7 = conv2d_bn(branch7x7, 192, 7, 1)
    branch7x7dbl = conv2d_bn(x, filters, 1, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, filters, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, filters, 1, 7)
    branch7x7dbl = conv2d_bn(branch7x7dbl, filters, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 192, 1, 7)
    branch_pool = _average_branch(x, 192)
    return layers.concatenate([branch1x1, branch7x7, branch7x7dbl, branch_pool],
                              axis=channel_axis(), name=name)


def _module_e(x, i):
    """The 8x8 module with expanded 1x3 / 3x1 branches ('mixed9', 'mixed10')."""
    axis = channel_axis()
    branch1x1 = conv2d_bn(x, 320, 1, 1)
    branch3x3 = conv2d_bn(x, 384, 1, 1)
    branch3x3_1 = conv2d_bn(branch3x3, 384, 1, 3)
    branch3x3_2 = conv2d_bn(branch3x3, 384, 3, 1)
    branch3x3 = layers.concatenate([branch3x3_1, branch3x3_2], axis=axis, name=f"mixed9_{i}")
    branch3x3dbl = conv2d_bn(x, 448, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 384, 3, 3)
    branch3x3dbl_1 = conv2d_bn(branch3x3dbl, 384, 1, 3)
    branch3x3dbl_2 = conv2d_bn(branch3x3dbl, 384, 3, 1)
    branch3x3dbl = layers.concatenate([branch3x3dbl_1, branch3x3dbl_2], axis=axis)
    branch_pool = _average_branch(x, 192)
    return layers.concatenate([branch1x1, branch3x3, branch3x3dbl, branch_pool], axis=axis,
                              name=f"mixed{9 + i}")


def InceptionV3(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                name="inception_v3"):
    """Instantiates the Inception v3 architecture.

    Args (as Keras): include_top (the classifier on top), weights (None, 'imagenet': Keras's
    file from the Keras cache, or a path), input_tensor, input_shape (with include_top=False:
    at least 75x75, 3 channels for 'imagenet'; default 299x299), pooling (None, 'avg' or
    'max' without the top), classes, classifier_activation, name. Inputs:
    preprocess_input's (tf mode, [-1, 1])."""
    check_weights(weights, include_top, classes, name)
    img_input, _ = image_input(input_tensor, input_shape, 299, include_top, weights, name,
                               min_size=75)
    axis = channel_axis()

    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)

    x = _module_a(x, 32, "mixed0")
    x = _module_a(x, 64, "mixed1")
    x = _module_a(x, 64, "mixed2")

    branch3x3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")
    branch3x3dbl = conv2d_bn(x, 64, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3, strides=(2, 2), padding="valid")
    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([branch3x3, branch3x3dbl, branch_pool], axis=axis, name="mixed3")

    x = _module_c(x, 128, "mixed4")
    x = _module_c(x, 160, "mixed5")
    x = _module_c(x, 160, "mixed6")
    x = _module_c(x, 192, "mixed7")

    branch3x3 = conv2d_bn(x, 192, 1, 1)
    branch3x3 = conv2d_bn(branch3x3, 320, 3, 3, strides=(2, 2), padding="valid")
    branch7x7x3 = conv2d_bn(x, 192, 1, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 1, 7)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 7, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 3, 3, strides=(2, 2), padding="valid")
    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([branch3x3, branch7x7x3, branch_pool], axis=axis, name="mixed8")

    x = _module_e(x, 0)
    x = _module_e(x, 1)

    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights)
    suffix = "" if include_top else "_notop"
    file_name = f"inception_v3_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


preprocess_input = imagenet_utils.module_preprocess_input("tf")
decode_predictions = imagenet_utils.decode_predictions
