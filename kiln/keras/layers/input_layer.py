"""InputLayer and Input: a model's entry points (`keras.layers.InputLayer`, `keras.Input`).

`keras.Input(shape)` returns a symbolic tensor to call layers on; its InputLayer is what
`model.layers` shows first in a functional model. Logical dims need a data format: the input
takes the backend's default and follows the first layer with a `data_format` that reads it.
"""

from ...graph.symbolic import SymbolicTensor
from ...plan.step_plan import logical_dims
from .. import backend
from .base_layer import Layer, LayerNode

# the size a None axis of an input is traced with (the model traces it once more at another
# size to find which axes of each layer's output follow it: keras/models/variable_shapes.py)
PROBE_SIZE = 32

# the data types an input may hold: floats, or integers (token ids for an Embedding)
INPUT_DTYPES = ("float32", "int32", "int64")


def input_dtype(dtype, context):
    """`dtype` (None, a name or a numpy dtype) as one of INPUT_DTYPES, or a ValueError."""
    if dtype is None:
        return "float32"
    if isinstance(dtype, dict):  # a serialized DTypePolicy
        dtype = (dtype.get("config") or {}).get("name", dtype)
    name = getattr(dtype, "name", None) or str(dtype)
    if name not in INPUT_DTYPES:
        raise ValueError(f"{context}: argument dtype must be one of {list(INPUT_DTYPES)}, got "
                         f"{dtype!r}")
    return name


class InputLayer(Layer):
    """Args: shape (Keras 3) or input_shape (Keras 2): the shape without the batch;
    batch_size; dtype ('float32', or 'int32' / 'int64' for token ids: the plan holds integer
    inputs as int32); name."""

    def __init__(self, shape=None, batch_size=None, input_shape=None, batch_shape=None,
                 input_tensor=None, sparse=None, ragged=None, optional=False,
                 batch_input_shape=None, dtype=None, **kwargs):
        if shape is None:
            shape = input_shape
        batch_shape = batch_shape if batch_shape is not None else batch_input_shape  # Keras 2
        if shape is None and batch_shape is not None:
            batch_size, shape = batch_shape[0], tuple(batch_shape)[1:]
        super().__init__(input_shape=shape, **kwargs)
        self.dtype = input_dtype(dtype, self.context)  # the input's data type, not a policy
        if self.input_shape_arg is None:
            raise ValueError(f"{self.context}: argument shape must be given, e.g. (28, 28, 1)")
        if any(d is not None and int(d) <= 0 for d in self.input_shape_arg):
            raise ValueError(f"{self.context}: argument shape must be positive ints or None "
                             f"(any size), got {self.input_shape_arg}")
        for argument, value in (("sparse", sparse), ("ragged", ragged),
                                ("optional", optional), ("input_tensor", input_tensor)):
            if value:
                raise ValueError(f"{self.context}: argument {argument} is not supported, "
                                 f"expected {None if argument == 'input_tensor' else False}, "
                                 f"got {value!r}")
        self.batch_size = batch_size
        data_format = backend.image_data_format()
        # a None size (any length, any image size) is traced at a probe size; each concrete
        # shape the model meets later gets a graph and plans of its own (variable_shapes.py)
        shape = tuple(PROBE_SIZE if d is None else int(d) for d in self.input_shape_arg)
        dims = logical_dims((batch_size, *shape), data_format)
        self.output_tensor = SymbolicTensor(dims, data_format, name=self.name, dtype=self.dtype)
        self.output_tensor.variable_axes = frozenset(
            axis for axis, d in enumerate(self.input_shape_arg, start=1) if d is None)
        self._inbound_nodes.append(LayerNode(self, (), {}, [self.output_tensor]))
        self.output_tensor._keras_history = (self, 0, 0)
        self.built = True
        self._first_output_shape = self.output_tensor.shape

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"batch_shape": (self.batch_size, *self.input_shape_arg), "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name, "optional": False}


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None,  # noqa: N802
          **kwargs):
    """A symbolic input tensor, as `keras.Input`: `x = Input((32, 32, 3)); y = Conv2D(...)(x)`.
    Also accepted as the first item of a Sequential model."""
    layer = InputLayer(shape=shape, batch_size=batch_size, batch_shape=batch_shape, name=name,
                       dtype=dtype, **kwargs)
    return layer.output_tensor


__all__ = ["Input", "InputLayer"]
