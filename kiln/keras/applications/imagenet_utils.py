"""`keras.applications.imagenet_utils`: the input preprocessing of the ImageNet models, the
decoding of their 1000-class predictions, and the checks and helpers every application
builder shares (input shape, padding of strided convolutions, the classifier activation).

As in Keras (keras/src/applications/imagenet_utils.py); the class index is read from the
Keras cache (`$KERAS_HOME/models/imagenet_class_index.json`, or `~/.keras/models/...`): kiln
downloads nothing.
"""

import json
import os
import warnings

import numpy as np

from .. import activations, backend

CLASS_INDEX = None
CLASS_INDEX_FILE = "imagenet_class_index.json"
CLASS_INDEX_URL = ("https://storage.googleapis.com/download.tensorflow.org/data/"
                   "imagenet_class_index.json")
CAFFE_MEAN = [103.939, 116.779, 123.68]
TORCH_MEAN, TORCH_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def keras_models_dir():
    """The folder Keras caches application files in: `$KERAS_HOME/models`, else
    `~/.keras/models` (not created)."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "models")


def preprocess_input(x, data_format=None, mode="caffe"):
    """Preprocesses a batch of images (values in [0, 255]), as Keras:
    caffe: RGB to BGR, then each channel zero-centered by ImageNet's means, no scaling;
    tf: scaled to [-1, 1]; torch: scaled to [0, 1], then normalized per channel by ImageNet's
    mean and std. A float numpy array is modified in place (as Keras does); others are
    converted to float32. A symbolic tensor (inside a model) gets the same arithmetic."""
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError("preprocess_input: argument mode must be one of 'caffe', 'tf' or "
                         f"'torch', got {mode!r}")
    if data_format is None:
        data_format = backend.image_data_format()
    elif data_format not in {"channels_first", "channels_last"}:
        raise ValueError("preprocess_input: argument data_format must be 'channels_first' or "
                         f"'channels_last', got {data_format!r}")
    from ...graph.symbolic import SymbolicTensor

    if isinstance(x, SymbolicTensor):
        return _preprocess_tensor(x, data_format, mode)
    x = np.asarray(x)
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(backend.floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    channel_axis = (0 if x.ndim == 3 else 1) if data_format == "channels_first" else x.ndim - 1
    if mode == "torch":
        x /= 255.0
        mean, std = TORCH_MEAN, TORCH_STD
    else:
        x = np.flip(x, axis=channel_axis)  # RGB -> BGR
        mean, std = CAFFE_MEAN, None
    shape = [1] * x.ndim
    shape[channel_axis] = 3
    x -= np.reshape(np.asarray(mean, x.dtype), shape)
    if std is not None:
        x /= np.reshape(np.asarray(std, x.dtype), shape)
    return x


def _preprocess_tensor(x, data_format, mode):
    from .. import ops

    if mode == "tf":
        return ops.subtract(ops.divide(x, 127.5), 1.0)
    ndim = len(x.shape)
    if mode == "torch":
        x = ops.divide(x, 255.0)
        mean, std = TORCH_MEAN, TORCH_STD
    else:
        if data_format == "channels_first":
            x = ops.stack([x[:, i] for i in (2, 1, 0)], axis=1)
        else:
            x = ops.stack([x[..., i] for i in (2, 1, 0)], axis=-1)
        mean, std = CAFFE_MEAN, None
    shape = (1, 3) + (1,) * (ndim - 2) if data_format == "channels_first" else (1,) * (
        ndim - 1) + (3,)
    x = ops.add(x, np.reshape(-np.asarray(mean, np.float32), shape))
    if std is not None:
        std_shape = (3, 1, 1) if data_format == "channels_first" else (3,)
        x = ops.divide(x, np.reshape(np.asarray(std, np.float32), std_shape))
    return x


_MODE_DOCS = {
    "caffe": "Caffe mode: RGB to BGR, each channel zero-centered by ImageNet's means, no scaling.",
    "tf": "tf mode: pixels scaled to [-1, 1].",
    "torch": "Torch mode: scaled to [0, 1], then normalized per channel by ImageNet's mean "
             "and std.",
    None: "Returns x unchanged, as Keras: the preprocessing is part of the model.",
}


def module_preprocess_input(mode):
    """An application module's `preprocess_input(x, data_format=None)`, as Keras's modules
    define it: this module's preprocess_input in `mode` ('caffe', 'tf', 'torch'), or the
    identity (None) where the model preprocesses its own inputs."""
    to_mode = preprocess_input

    def module_preprocess(x, data_format=None):
        if mode is None:
            return x
        return to_mode(x, data_format=data_format, mode=mode)

    module_preprocess.__name__ = module_preprocess.__qualname__ = "preprocess_input"
    module_preprocess.__doc__ = _MODE_DOCS[mode]
    return module_preprocess


def decode_predictions(preds, top=5):
    """The `top` classes of each prediction of a batch of shape (samples, 1000): one list of
    (class_name, class_description, score) per sample, best first. The class index is Keras's
    imagenet_class_index.json, read from the Keras cache."""
    global CLASS_INDEX

    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError("decode_predictions expects a batch of predictions (i.e. a 2D array "
                         f"of shape (samples, 1000)), got an array of shape {preds.shape}")
    if CLASS_INDEX is None:
        path = os.path.join(keras_models_dir(), CLASS_INDEX_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"decode_predictions needs Keras's ImageNet class index {CLASS_INDEX_FILE}, "
                f"which is not at {path}; kiln downloads nothing: place the file there "
                f"(it is published at {CLASS_INDEX_URL}; Keras caches it there itself)")
        with open(path) as f:
            CLASS_INDEX = json.load(f)
    results = []
    for pred in preds:
        top_indices = pred.argsort()[-top:][::-1]
        result = [tuple(CLASS_INDEX[str(i)]) + (pred[i],) for i in top_indices]
        result.sort(key=lambda item: item[2], reverse=True)
        results.append(result)
    return results


def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten,
                       weights=None):
    """The model's input shape: `input_shape` checked, or the default (as Keras)."""
    channels_first = data_format == "channels_first"
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[0] if channels_first else input_shape[-1]
        if channels not in {1, 3}:
            warnings.warn("This model usually expects 1 or 3 input channels. However, it was "
                          f"passed an input_shape with {channels} input channels.",
                          stacklevel=3)
        default_shape = ((input_shape[0], default_size, default_size) if channels_first
                         else (default_size, default_size, input_shape[-1]))
    else:
        default_shape = ((3, default_size, default_size) if channels_first
                         else (default_size, default_size, 3))
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default_shape:
            raise ValueError("When setting include_top=True and loading 'imagenet' weights, "
                             f"input_shape should be {default_shape}, got {input_shape}")
        return default_shape
    if input_shape:
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError(f"input_shape must be a tuple of three integers, got {input_shape}")
        channels = input_shape[0] if channels_first else input_shape[-1]
        if channels != 3 and weights == "imagenet":
            raise ValueError(f"The input must have 3 channels; got input_shape={input_shape}")
        sizes = input_shape[1:] if channels_first else input_shape[:2]
        if any(size is not None and size < min_size for size in sizes):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; got "
                             f"input_shape={input_shape}")
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (3, None, None) if channels_first else (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError("If include_top is True, you should specify a static input_shape, "
                         f"got input_shape={input_shape}")
    return input_shape


def correct_pad(inputs, kernel_size):
    """The ((top, bottom), (left, right)) zero padding before a strided convolution of
    `kernel_size`, as Keras (one less on the leading side for even sizes)."""
    first = 2 if backend.image_data_format() == "channels_first" else 1
    input_size = inputs.shape[first:first + 2]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if input_size[0] is None else (1 - input_size[0] % 2, 1 - input_size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def validate_activation(classifier_activation, weights):
    """With pretrained weights, the classifier activation must be None or 'softmax'."""
    if weights is None:
        return
    name = activations.get_name(classifier_activation, "classifier_activation")
    if name not in {"softmax", "linear"}:
        raise ValueError("Only None and 'softmax' activations are allowed for the argument "
                         "classifier_activation when using pretrained weights, with "
                         f"include_top=True; got classifier_activation={classifier_activation!r}")
