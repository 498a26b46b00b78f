"""`keras.applications.resnet`: ResNet50, ResNet101 and ResNet152 (He et al., 2015), layer by
layer as Keras 3 builds them (keras/src/applications/resnet.py): the same layer names, weight
shapes and order, so Keras's weight files load. Also the builder and residual blocks that
resnet_v2 shares."""

from .. import layers
from . import imagenet_utils
from .application_builder import channel_axis, check_weights, finish, image_input, top

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"


def ResNet(stack_fn, preact, use_bias, include_top=True, weights="imagenet",  # noqa: N802
           input_tensor=None, input_shape=None, pooling=None, classes=1000,
           classifier_activation="softmax", name="resnet", weights_name=None):
    """The ResNet and ResNetV2 body around `stack_fn(x)` (the residual stacks).

    preact: pre-activation (ResNetV2: no BN after the stem, a BN + relu at the end).
    use_bias: biases in the stem convolution."""
    check_weights(weights, include_top, classes, name)
    img_input, _ = image_input(input_tensor, input_shape, 224, include_top, weights, name)
    bn_axis = channel_axis()

    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.BatchNormalization(axis=bn_axis, epsilon=1.001e-5, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)

    x = stack_fn(x)

    if preact:
        x = layers.BatchNormalization(axis=bn_axis, epsilon=1.001e-5, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    x = top(x, include_top, pooling, classes, classifier_activation, weights)
    suffix = "" if include_top else "_notop"
    file_name = f"{weights_name}_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


def _bn(x, name):
    return layers.BatchNormalization(axis=channel_axis(), epsilon=1.001e-5, name=name)(x)


def residual_block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """The bottleneck block of ResNet v1: 1x1, kxk, 1x1 (4 * filters) convolutions with BN,
    added to the input (or to its 1x1 strided projection)."""
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = _bn(shortcut, f"{name}_0_bn")
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = _bn(x, f"{name}_1_bn")
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="SAME", name=f"{name}_2_conv")(x)
    x = _bn(x, f"{name}_2_bn")
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = _bn(x, f"{name}_3_bn")
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def stack_residual_blocks_v1(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = residual_block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def residual_block_v2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    """The pre-activation bottleneck block of ResNet v2."""
    preact = _bn(x, f"{name}_preact_bn")
    preact = layers.Activation("relu", name=f"{name}_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = _bn(x, f"{name}_1_bn")
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False,
                      name=f"{name}_2_conv")(x)
    x = _bn(x, f"{name}_2_bn")
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return layers.Add(name=f"{name}_out")([shortcut, x])


def stack_residual_blocks_v2(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v2(x, filters, conv_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = residual_block_v2(x, filters, name=f"{name}_block{i}")
    return residual_block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def _v1(depths):
    def stack_fn(x):
        x = stack_residual_blocks_v1(x, 64, depths[0], stride1=1, name="conv2")
        x = stack_residual_blocks_v1(x, 128, depths[1], name="conv3")
        x = stack_residual_blocks_v1(x, 256, depths[2], name="conv4")
        return stack_residual_blocks_v1(x, 512, depths[3], name="conv5")

    return stack_fn


def ResNet50(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             name="resnet50"):
    """Instantiates the ResNet50 architecture (see ResNet101 for the arguments)."""
    return ResNet(_v1((3, 4, 6, 3)), False, True, include_top, weights,
                  input_tensor, input_shape, pooling, classes, classifier_activation, name,
                  weights_name="resnet50")


def ResNet101(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
              input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
              name="resnet101"):
    """Instantiates the ResNet101 architecture.

    Args (as Keras): include_top (the classifier on top), weights (None, 'imagenet': Keras's
    file from the Keras cache, or a path), input_tensor, input_shape (with include_top=False:
    at least 32x32, 3 channels for 'imagenet'), pooling (None, 'avg' or 'max' without the
    top), classes, classifier_activation, name."""
    return ResNet(_v1((3, 4, 23, 3)), False, True, include_top, weights,
                  input_tensor, input_shape, pooling, classes, classifier_activation, name,
                  weights_name="resnet101")


def ResNet152(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
              input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
              name="resnet152"):
    """Instantiates the ResNet152 architecture (see ResNet101 for the arguments)."""
    return ResNet(_v1((3, 8, 36, 3)), False, True, include_top, weights,
                  input_tensor, input_shape, pooling, classes, classifier_activation, name,
                  weights_name="resnet152")


preprocess_input = imagenet_utils.module_preprocess_input("caffe")
decode_predictions = imagenet_utils.decode_predictions
