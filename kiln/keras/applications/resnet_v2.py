"""`keras.applications.resnet_v2`: ResNet50V2, ResNet101V2 and ResNet152V2 (pre-activation
ResNets, He et al., 2016), as Keras 3 builds them (keras/src/applications/resnet_v2.py)."""

from . import imagenet_utils
from .resnet import ResNet, stack_residual_blocks_v2


def _v2(depths):
    def stack_fn(x):
        x = stack_residual_blocks_v2(x, 64, depths[0], name="conv2")
        x = stack_residual_blocks_v2(x, 128, depths[1], name="conv3")
        x = stack_residual_blocks_v2(x, 256, depths[2], name="conv4")
        return stack_residual_blocks_v2(x, 512, depths[3], stride1=1, name="conv5")

    return stack_fn


def _resnet_v2(depths, weights_name, include_top, weights, input_tensor, input_shape, pooling,
               classes, classifier_activation, name):
    return ResNet(_v2(depths), True, True, include_top, weights, input_tensor, input_shape,
                  pooling, classes, classifier_activation, name, weights_name=weights_name)


def ResNet50V2(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
               input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
               name="resnet50v2"):
    """Instantiates the ResNet50V2 architecture (arguments as resnet.ResNet101's)."""
    return _resnet_v2((3, 4, 6, 3), "resnet50v2", include_top, weights, input_tensor,
                      input_shape, pooling, classes, classifier_activation, name)


def ResNet101V2(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                name="resnet101v2"):
    """Instantiates the ResNet101V2 architecture (arguments as resnet.ResNet101's)."""
    return _resnet_v2((3, 4, 23, 3), "resnet101v2", include_top, weights, input_tensor,
                      input_shape, pooling, classes, classifier_activation, name)


def ResNet152V2(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                name="resnet152v2"):
    """Instantiates the ResNet152V2 architecture (arguments as resnet.ResNet101's)."""
    return _resnet_v2((3, 8, 36, 3), "resnet152v2", include_top, weights, input_tensor,
                      input_shape, pooling, classes, classifier_activation, name)


preprocess_input = imagenet_utils.module_preprocess_input("tf")
decode_predictions = imagenet_utils.decode_predictions
