"""`keras.applications.vgg19`: VGG19 as Keras 3 builds it (keras/src/applications/vgg19.py):
VGG16's body with four convolutions in blocks 3 to 5."""

from .vgg16 import VGG, decode_predictions, preprocess_input

__all__ = ["VGG19", "decode_predictions", "preprocess_input"]


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg19"):
    """Instantiates the VGG19 model (arguments as vgg16.VGG16's)."""
    return VGG((2, 2, 4, 4, 4), include_top, weights, input_tensor, input_shape, pooling,
               classes, classifier_activation, name)
