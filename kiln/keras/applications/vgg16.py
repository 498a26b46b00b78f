"""`keras.applications.vgg16`: VGG16 (Simonyan & Zisserman, 2014) as Keras 3 builds it
(keras/src/applications/vgg16.py), and the VGG body that vgg19 shares."""

from .. import layers
from . import imagenet_utils
from .application_builder import check_weights, finish, image_input, validate_activation

WEIGHTS_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/"


def VGG(convolutions_per_block, include_top, weights, input_tensor, input_shape,  # noqa: N802
        pooling, classes, classifier_activation, name):
    """Five blocks of 3x3 relu convolutions (64, 128, 256, 512, 512 filters; the counts per
    block given) each closed by a 2x2 max pooling, then Flatten and three Dense layers."""
    check_weights(weights, include_top, classes, name)
    img_input, _ = image_input(input_tensor, input_shape, 224, include_top, weights, name)
    x = img_input
    for block, (filters, count) in enumerate(zip((64, 128, 256, 512, 512),
                                                 convolutions_per_block, strict=True), 1):
        for i in range(1, count + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same",
                              name=f"block{block}_conv{i}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D()(x)  # Keras's automatic names here
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D()(x)
    family = name_of_weights(convolutions_per_block)
    file_name = f"{family}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    return finish(input_tensor, img_input, x, name, weights, file_name,
                  f"{WEIGHTS_BASE}{family}/")


def name_of_weights(convolutions_per_block):
    return "vgg19" if tuple(convolutions_per_block) == (2, 2, 4, 4, 4) else "vgg16"


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg16"):
    """Instantiates the VGG16 model.

    Args (as Keras): include_top (Flatten and the three Dense layers; the input must then be
    224x224 with 'imagenet'), weights (None, 'imagenet': Keras's file from the Keras cache, or
    a path), input_tensor, input_shape, pooling (None, 'avg' or 'max' without the top),
    classes, classifier_activation, name."""
    return VGG((2, 2, 3, 3, 3), include_top, weights, input_tensor, input_shape, pooling,
               classes, classifier_activation, name)


preprocess_input = imagenet_utils.module_preprocess_input("caffe")
decode_predictions = imagenet_utils.decode_predictions
