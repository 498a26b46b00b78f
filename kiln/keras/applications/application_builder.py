"""What every application builder shares: the `weights` argument, the image input (a new
`Input` or the caller's `input_tensor`), the classifier or pooling top, and loading weights:
a file given by path, or Keras's published ImageNet file from the Keras cache.

kiln downloads nothing: `weights="imagenet"` reads `$KERAS_HOME/models/<Keras's file name>`
(or `~/.keras/models/...`), where Keras itself caches the file it downloads; when the file is
not there, the error names the file, the folder and where Keras publishes it. The models'
layer names and weight order are Keras's, so the legacy `.h5` files load in layer order as
Keras 3 loads them, and `.weights.h5` files by path.
"""

import os

from .. import backend, layers
from ..models import Model
from .imagenet_utils import keras_models_dir, obtain_input_shape, validate_activation


def check_weights(weights, include_top, classes, who):
    """Keras's checks of `weights` (None, 'imagenet' or an existing file) and `classes`."""
    if not (weights in {"imagenet", None} or (isinstance(weights, (str, os.PathLike))
                                              and os.path.exists(weights))):
        raise ValueError(f"{who}: the weights argument should be either None (random "
                         "initialization), 'imagenet' (pre-training on ImageNet), or the path "
                         f"to the weights file to be loaded; got weights={weights!r}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(f"{who}: if using weights='imagenet' with include_top=True, classes "
                         f"should be 1000; got classes={classes}")


def channel_axis():
    return 3 if backend.image_data_format() == "channels_last" else 1


def image_input(input_tensor, input_shape, default_size, include_top, weights, who,
                min_size=32):
    """(the tensor the network starts from, input_shape): Keras's default or checked shape."""
    input_shape = obtain_input_shape(input_shape, default_size=default_size, min_size=min_size,
                                     data_format=backend.image_data_format(),
                                     require_flatten=include_top, weights=weights)
    if input_tensor is None:
        return layers.Input(shape=input_shape), input_shape
    from ...graph.symbolic import SymbolicTensor

    if not isinstance(input_tensor, SymbolicTensor):
        raise ValueError(f"{who}: argument input_tensor must be a kiln.keras tensor "
                         "(keras.Input(...) or a layer's output), got "
                         f"{type(input_tensor).__name__}")
    return input_tensor, input_shape


def source_inputs(input_tensor, img_input):
    """The model's inputs: the Input tensors `input_tensor` was computed from (Keras's
    operation_utils.get_source_inputs), else the new Input."""
    if input_tensor is None:
        return img_input
    found, stack, seen = [], [input_tensor], set()
    while stack:
        tensor = stack.pop()
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        if tensor.node is None:
            found.append(tensor)
        else:
            stack.extend(reversed(tensor.node.inputs))
    return found[0] if len(found) == 1 else found


def top(x, include_top, pooling, classes, classifier_activation, weights, names=("avg_pool",
                                                                                  "max_pool"),
        **dense_kwargs):
    """GlobalAveragePooling2D + Dense 'predictions', or the optional pooling of a headless
    model; `names` (None for Keras's automatic names) as the family's Keras source has them."""
    average, maximum = names
    if include_top:
        x = layers.GlobalAveragePooling2D(name=average)(x)
        validate_activation(classifier_activation, weights)
        return layers.Dense(classes, activation=classifier_activation, name="predictions",
                            **dense_kwargs)(x)
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name=average)(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name=maximum)(x)
    return x


def imagenet_weights_path(file_name, url_base, who):
    """The Keras cache's copy of Keras's published ImageNet weights file `file_name`."""
    path = os.path.join(keras_models_dir(), file_name)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{who}: weights='imagenet' needs Keras's pretrained weights file {file_name}, "
            f"which is not at {path}. kiln downloads nothing: place the file there (Keras "
            f"publishes it at {url_base}{file_name} and caches it in that folder itself), or "
            "pass weights=<path of the file>")
    return path


def load_weights(model, weights, imagenet_file=None, url_base=""):
    """Loads `weights` ('imagenet': the Keras cache's file; a path: that file) into `model`.
    A file that does not fit the architecture is an error naming the model, the file and the
    layers that differ (load_weights checks every layer before assigning anything)."""
    if weights is None:
        return model
    who = model.name
    path = (imagenet_weights_path(imagenet_file, url_base, who) if weights == "imagenet"
            else os.fspath(weights))
    try:
        model.load_weights(path)
    except ValueError as error:
        raise ValueError(f"{who}: the weights file {path} does not fit this architecture: "
                         f"{error}") from error
    except OSError as error:  # not a weights file at all (Keras raises h5py's OSError)
        raise OSError(f"{who}: argument weights: {path} cannot be read as a weights file: "
                      f"{error}") from error
    return model


def finish(input_tensor, img_input, outputs, name, weights, imagenet_file=None, url_base=""):
    """The Functional model of the network and its weights."""
    model = Model(source_inputs(input_tensor, img_input), outputs, name=name)
    return load_weights(model, weights, imagenet_file, url_base)
