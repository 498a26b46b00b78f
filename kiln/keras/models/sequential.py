"""Sequential model (`keras.models.Sequential`)."""

from ...graph.fusion import fuse
from ...graph.symbolic import SymbolicTensor, ops_in_order
from ...plan.parameters import ParameterStore
from ...plan.step_plan import logical_dims
from .. import backend, mixed_precision
from ..layers.input_layer import InputLayer
from .model import Model


class Sequential(Model):
    """A linear stack of layers.

    Args:
        layers: optional list of layers; the first needs `input_shape=` (or be an Input).
        name: model name.

    Example:
        >>> model = Sequential()
        >>> model.add(Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)))
        >>> model.add(Flatten())
        >>> model.add(Dense(10, activation="softmax"))
    """

    def __init__(self, layers=None, name=None):
        super().__init__(name=name or "sequential")
        self.layers = []
        for layer in layers or ():
            self.add(layer)

    def add(self, layer):
        if not hasattr(layer, "call") or not hasattr(layer, "get_config"):
            raise TypeError(f"Sequential.add: argument layer must be a kiln.keras layer, "
                            f"got {layer!r}")
        if self.built:
            raise RuntimeError("Sequential.add: the model was already built; add layers "
                               "before compile()/fit()")
        self.layers.append(layer)

    def build(self, input_shape=None):
        """Trace the layers into ops and create their weights in one ParameterStore."""
        if self.built:
            return
        if not self.layers:
            raise ValueError("Sequential: the model has no layers")
        first = self.layers[0]
        shape = input_shape[1:] if input_shape is not None else first.input_shape_arg
        if shape is None:
            raise ValueError(f"{first.context}: the first layer needs input_shape=, e.g. "
                             "input_shape=(28, 28, 1)")
        # The first layer that has a data_format decides how the input is read (an Input or
        # InputLayer in front has none).
        data_format = next((layer.data_format for layer in self.layers
                            if getattr(layer, "data_format", None)), backend.image_data_format())
        dims = logical_dims((None, *shape), data_format)
        self.store = ParameterStore()
        tensor = SymbolicTensor(dims, data_format)
        self.input = tensor
        for layer in self.layers:
            if isinstance(layer, InputLayer):
                continue
            layer._store = self.store
            tensor = layer(tensor)
        self.output = tensor
        self.ops = fuse(ops_in_order(tensor))
        self.data_format = data_format
        self.first_layer = next(layer for layer in self.layers
                                if not isinstance(layer, InputLayer))
        # The policy in force when the model is built decides its compute type, as in Keras.
        self.compute_dtype = mixed_precision.global_policy().compute_dtype
        self.built = True

    def get_config(self):
        return {"name": self.name,
                "layers": [{"class_name": type(layer).__name__, "config": layer.get_config()}
                           for layer in self.layers]}
