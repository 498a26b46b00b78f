"""`keras.applications.xception`: Xception (Chollet, 2017), layer by layer as Keras 3 builds
it (keras/src/applications/xception.py): depthwise-separable convolutions in an entry flow
of strided residual blocks, eight middle blocks and an exit flow, with Keras's layer names
(the residual projections and their BatchNormalizations keep Keras's automatic names) and
weight order, so Keras's weight files load. Inputs at least 71x71."""

from .. import layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish, image_input

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"


def _sepconv_bn(x, filters, name):
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=channel_axis(), name=f"{name}_bn")(x)


def _projection(x, filters):
    """The strided 1x1 projection of a downsampling block's shortcut (automatic names)."""
    residual = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same",
                             use_bias=False)(x)
    return layers.BatchNormalization(axis=channel_axis())(residual)


def _entry_block(x, filters, block, first=False, exit_filters=None):
    """Two separable convolutions (the first preceded by relu unless `first`), 3x3 max
    pooling by 2, added to the strided projection of the input."""
    residual = _projection(x, exit_filters or filters)
    prefix = f"block{block}"
    if not first:
        x = layers.Activation("relu", name=f"{prefix}_sepconv1_act")(x)
    x = _sepconv_bn(x, filters, f"{prefix}_sepconv1")
    x = layers.Activation("relu", name=f"{prefix}_sepconv2_act")(x)
    x = _sepconv_bn(x, exit_filters or filters, f"{prefix}_sepconv2")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"{prefix}_pool")(x)
    return layers.add([x, residual])


def Xception(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             name="xception"):
    """Instantiates the Xception architecture.

    Args (as Keras): include_top (the classifier on top), weights (None, 'imagenet': Keras's
    file from the Keras cache, or a path), input_tensor, input_shape (with include_top=False:
    at least 71x71, 3 channels for 'imagenet'; default 299x299), pooling (None, 'avg' or
    'max' without the top), classes, classifier_activation, name. Inputs:
    preprocess_input's (tf mode, [-1, 1])."""
    check_weights(weights, include_top, classes, name)
    img_input, _ = image_input(input_tensor, input_shape, 299, include_top, weights, name,
                               min_size=71)
    axis = channel_axis()

    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(
        img_input)
    x = layers.BatchNormalization(axis=axis, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=axis, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)

    x = _entry_block(x, 128, 2, first=True)
    x = _entry_block(x, 256, 3)
    x = _entry_block(x, 728, 4)
    for i in range(8):
        residual = x
        prefix = f"block{i + 5}"
        for j in (1, 2, 3):
            x = layers.Activation("relu", name=f"{prefix}_sepconv{j}_act")(x)
            x = _sepconv_bn(x, 728, f"{prefix}_sepconv{j}")
        x = layers.add([x, residual])
    x = _entry_block(x, 728, 13, exit_filters=1024)

    x = _sepconv_bn(x, 1536, "block14_sepconv1")
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = _sepconv_bn(x, 2048, "block14_sepconv2")
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)

    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights)
    suffix = "" if include_top else "_notop"
    file_name = f"xception_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


def pooled_top(x, include_top, pooling, classes, classifier_activation, weights):
    """Keras's top of Xception and InceptionV3: 'avg_pool' + 'predictions', or a pooling
    with Keras's automatic name."""
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    if pooling == "avg":
        return layers.GlobalAveragePooling2D()(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D()(x)
    return x


preprocess_input = imagenet_utils.module_preprocess_input("tf")
decode_predictions = imagenet_utils.decode_predictions
