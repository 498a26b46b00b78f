"""`keras.applications.densenet`: DenseNet121, DenseNet169 and DenseNet201 (Huang et al.,
2017), layer by layer as Keras 3 builds them (keras/src/applications/densenet.py): the same
layer names, weight shapes and order, so Keras's weight files load. Each dense block
concatenates 32 new channels per building block; the transition blocks halve the channels
and the resolution. channels_last only, as in Keras."""

from .. import backend, layers
from . import imagenet_utils
from .application_builder import check_weights, finish, image_input, top

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
BLOCKS = {"densenet121": (6, 12, 24, 16), "densenet169": (6, 12, 32, 32),
          "densenet201": (6, 12, 48, 32)}


def _bn(x, name):
    return layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=name)(x)


def dense_block(x, blocks, name):
    """`blocks` building blocks, each adding 32 channels."""
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x, reduction, name):
    """BN, relu, a 1x1 convolution to `reduction` of the channels, 2x2 average pooling."""
    x = _bn(x, f"{name}_bn")
    x = layers.Activation("relu", name=f"{name}_relu")(x)
    x = layers.Conv2D(int(x.shape[3] * reduction), 1, use_bias=False, name=f"{name}_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def conv_block(x, growth_rate, name):
    """BN, relu, 1x1 convolution (4 * growth_rate), BN, relu, 3x3 convolution (growth_rate),
    concatenated to the input."""
    x1 = _bn(x, f"{name}_0_bn")
    x1 = layers.Activation("relu", name=f"{name}_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=f"{name}_1_conv")(x1)
    x1 = _bn(x1, f"{name}_1_bn")
    x1 = layers.Activation("relu", name=f"{name}_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False,
                       name=f"{name}_2_conv")(x1)
    return layers.Concatenate(axis=3, name=f"{name}_concat")([x, x1])


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             name="densenet"):
    """The DenseNet body: `blocks` building blocks in each of the four dense blocks."""
    if backend.image_data_format() == "channels_first":
        raise ValueError(f"{name}: DenseNet does not support the 'channels_first' image data "
                         "format; use 'channels_last' (keras.config.set_image_data_format)")
    check_weights(weights, include_top, classes, name)
    img_input, _ = image_input(input_tensor, input_shape, 224, include_top, weights, name)

    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = _bn(x, "conv1_bn")
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)

    for stage, count in enumerate(blocks, start=2):
        x = dense_block(x, count, name=f"conv{stage}")
        if stage < 5:
            x = transition_block(x, 0.5, name=f"pool{stage}")
    x = _bn(x, "bn")
    x = layers.Activation("relu", name="relu")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights)

    file_name = None
    for weights_name, counts in BLOCKS.items():
        if tuple(blocks) == counts:
            suffix = "" if include_top else "_notop"
            file_name = f"{weights_name}_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
    if weights == "imagenet" and file_name is None:
        raise ValueError(f"{name}: no ImageNet weights for blocks={list(blocks)}")
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


def DenseNet121(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                name="densenet121"):
    """Instantiates the DenseNet121 architecture.

    Args (as Keras): include_top (the classifier on top), weights (None, 'imagenet': Keras's
    file from the Keras cache, or a path), input_tensor, input_shape (with include_top=False:
    at least 32x32, 3 channels for 'imagenet'), pooling (None, 'avg' or 'max' without the
    top), classes, classifier_activation, name. Inputs: preprocess_input's (torch mode)."""
    return DenseNet(BLOCKS["densenet121"], include_top, weights, input_tensor, input_shape,
                    pooling, classes, classifier_activation, name)


def DenseNet169(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                name="densenet169"):
    """Instantiates the DenseNet169 architecture (see DenseNet121 for the arguments)."""
    return DenseNet(BLOCKS["densenet169"], include_top, weights, input_tensor, input_shape,
                    pooling, classes, classifier_activation, name)


def DenseNet201(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                name="densenet201"):
    """Instantiates the DenseNet201 architecture (see DenseNet121 for the arguments)."""
    return DenseNet(BLOCKS["densenet201"], include_top, weights, input_tensor, input_shape,
                    pooling, classes, classifier_activation, name)


preprocess_input = imagenet_utils.module_preprocess_input("torch")
decode_predictions = imagenet_utils.decode_predictions
