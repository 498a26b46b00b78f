"""Sequential model (`keras.models.Sequential`): a functional model over a list of layers."""

import warnings

import numpy as np

from .. import backend
from ..layers.base_layer import Layer, unique_name
from ..layers.input_layer import InputLayer
from .model import Model


class Sequential(Model):
    """A linear stack of layers.

    Args:
        layers: optional list of layers; the first needs `input_shape=` (Keras 2), or the
            list starts with `keras.Input(shape)` / an InputLayer (Keras 3).
        name: model name.

    Example:
        >>> model = Sequential()
        >>> model.add(Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)))
        >>> model.add(Flatten())
        >>> model.add(Dense(10, activation="softmax"))
    """

    def __init__(self, layers=None, name=None, trainable=True):
        super().__init__(name=name, trainable=trainable)
        self._stack = []
        self._input_layer = None
        for layer in layers or ():
            self.add(layer, rebuild=False)
        self._maybe_rebuild()

    def add(self, layer, rebuild=True):
        """Put `layer` on top; the model builds again (its layers make their weights) as soon
        as the input shape is known, as in Keras 3."""
        history = getattr(layer, "_keras_history", None)
        if history is not None and isinstance(history[0], InputLayer):
            layer = history[0]  # keras.Input(...) as the first item: its InputLayer
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: argument layer must be a kiln.keras layer, "
                            f"got {layer!r}")
        if isinstance(layer, InputLayer):
            if self._stack or self._input_layer is not None:
                raise ValueError(f"{self.context}: an Input can only be the first item")
            self._input_layer = layer
        else:
            self._stack.append(layer)
        self._reset_graph()
        if rebuild:
            self._maybe_rebuild()

    def pop(self, rebuild=True):
        if not self._stack:
            raise TypeError(f"{self.context}: there are no layers to pop")
        layer = self._stack.pop()
        self._reset_graph()
        if rebuild:
            self._maybe_rebuild()
        return layer

    def _maybe_rebuild(self):
        """Keras 3 builds a Sequential model whenever its stack changes and the input shape
        is known (an Input first, `input_shape=` on the first layer or a built model first),
        so its layers have weights before compile; without it the model stays unbuilt until
        fit / predict / build(input_shape)."""
        self._reset_graph()
        if self._stack and self._known_input_shape() is not None:
            try:
                with warnings.catch_warnings():
                    if self.__dict__.get("_built_before"):  # warned on the first build
                        warnings.filterwarnings("ignore", message=".*no native bf16")
                    self.build()
                self._built_before = True
            except NotImplementedError:
                # as Keras: a layer that cannot be traced yet leaves the model unbuilt here;
                # compile / fit build it again and report the error
                self._reset_graph()

    def _reset_graph(self):
        """The stack changed: the graph is made again on next use (weights stay)."""
        self.built = False
        self._plans = {}
        self._layers = None

    @property
    def layers(self):
        return list(self._stack)

    def build(self, input_shape=None):
        """Call the layers in order on one input and make the graph."""
        if input_shape is not None and self._input_layer is not None:
            shape = self._input_layer.input_shape_arg
            if tuple(input_shape)[1:] != tuple(shape):
                raise ValueError(f"{self.context}: the model has already been configured to "
                                 f"use input shape {(None, *shape)}; it cannot be built with "
                                 f"input_shape {tuple(input_shape)}")
        if self.built:
            return
        if not self._stack:
            raise ValueError(f"{self.context}: the model has no layers")
        first = self._stack[0]
        dtype = None
        if self._input_layer is not None:
            shape, name = self._input_layer.input_shape_arg, self._input_layer.name
            dtype = self._input_layer.dtype
        elif input_shape is not None:
            shape, name = tuple(input_shape)[1:], None
        else:
            shape, name = self._known_input_shape(), None
        if shape is None:
            raise ValueError(f"{first.context}: the first layer needs input_shape=, e.g. "
                             "input_shape=(28, 28, 1)")
        # The first layer that has a data_format decides how the input is read.
        data_format = next((layer.data_format for layer in self._stack
                            if getattr(layer, "data_format", None)),
                           backend.image_data_format())
        saved = backend.image_data_format()
        backend.set_image_data_format(data_format)
        try:
            # a fixed batch size (stateful layers need one) from the Input or Keras 2's
            # batch_input_shape on the first layer
            batch_size = (first.batch_size_arg if self._input_layer is None
                          else getattr(self._input_layer, "batch_size", None))
            # the input of an earlier build is kept when it reads the data the same way, as
            # Keras keeps its InputLayer: `layer.output` (its first call's) then still comes
            # from `model.input`, e.g. for `K.function([model.input], [layer.output])`
            if (self._input_layer is None
                    or self._input_layer.output_tensor.data_format != data_format):
                self._input_layer = InputLayer(shape=shape, name=name, dtype=dtype,
                                               batch_size=batch_size)
        finally:
            backend.set_image_data_format(saved)
        tensor = inputs = self._input_layer.output_tensor
        for layer in self._stack:
            tensor = layer(tensor)
        self._layers = [self._input_layer, *self._stack]
        self._init_graph(inputs, tensor, layers=self._layers)
        unique_name("Functional")  # Keras builds a Functional model inside: it takes a name

    def _known_input_shape(self):
        """The input shape (without the batch) the stack declares, or None."""
        if self._input_layer is not None:
            return self._input_layer.input_shape_arg
        first = self._stack[0] if self._stack else None
        if first is None:
            return None
        if first.input_shape_arg is not None:
            return first.input_shape_arg
        if isinstance(first, Model) and first.built and len(first.inputs) == 1:
            return tuple(first.inputs[0].shape[1:])  # a built model as the first layer
        return None

    def _build_from_data(self, x):
        """fit / predict on an unbuilt model: without an input shape (Keras 2's
        `Embedding(max_features, 128)` first, as in imdb_lstm.py) the data's shape fixes it, as
        Keras builds a deferred Sequential."""
        if not self._stack or self._known_input_shape() is not None:
            self.build()
            return
        if isinstance(x, (list, tuple)) and len(x) == 1 and hasattr(x[0], "shape"):
            x = x[0]  # one input given in a list
        shape = x.shape if hasattr(x, "shape") else np.shape(x)
        if len(shape) < 2:
            raise ValueError(f"{self.first_layer.context}: the first layer has no input_shape= "
                             f"and the data's shape {tuple(shape)} has no axis after the batch; "
                             f"expected a batch of samples, e.g. shape (samples, steps)")
        self.build((None, *tuple(shape)[1:]))

    def _build_if_possible(self):
        if not self.built and self._stack and self._known_input_shape() is not None:
            self.build()

    def _is_functional(self):
        return True

    def _graph_shapes(self, attribute, tensors):
        self._build_if_possible()
        if not self.built:
            what = "input" if attribute == "input_shape" else "output"
            raise AttributeError(f"Sequential model '{self.name}' has no defined {what} "
                                 "shape yet.")
        return super()._graph_shapes(attribute, tensors)

    @property
    def first_layer(self):
        return self._stack[0]

    def call(self, inputs, training=None):
        if not self.built:
            self.build((None, *flatten_shape(inputs)))
        tensor = inputs
        for layer in self._stack:
            tensor = layer(tensor)
        return tensor

    def predict_classes(self, x, batch_size=32, verbose=0):
        """Keras 2's class predictions (removed in Keras 2.6, still in the classic scripts):
        the argmax over the last axis, or `int32(proba > 0.5)` for a single output unit."""
        proba = self.predict(x, batch_size=batch_size, verbose=verbose)
        if proba.shape[-1] > 1:
            return proba.argmax(axis=-1)
        return (proba > 0.5).astype("int32")

    def predict_proba(self, x, batch_size=32, verbose=0):
        """Keras 2's `predict`, warning when the outputs are not probabilities."""
        proba = self.predict(x, batch_size=batch_size, verbose=verbose)
        if proba.min() < 0.0 or proba.max() > 1.0:
            warnings.warn(f"{self.context}.predict_proba: the model returns values outside "
                          f"[0, 1]; did you forget a sigmoid or softmax output activation?",
                          stacklevel=2)
        return proba

    def get_config(self):
        """Keras 3's config: name, trainable, dtype, the layers (InputLayer first)."""
        from ..saving import model_config

        return model_config.sequential_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        from ..saving import model_config

        return model_config.sequential_from_config(cls, config, custom_objects, safe_mode)


def flatten_shape(tensor):
    return tuple(tensor.shape[1:])
