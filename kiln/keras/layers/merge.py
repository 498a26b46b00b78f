"""Merge layers (`keras.layers.Add`, `Subtract`, `Multiply`, `Average`, `Maximum`, `Minimum`,
`Concatenate`) and their functional forms (`keras.layers.add(...)`, ...).

Each is one engine op over its list of inputs (kiln/ops/merge.py, concatenate.py): oneDNN
`binary`, `sum` and `concat` in the layout the inputs already have. A relu after an Add (a
residual block's) is fused into it when nothing else reads the sum.
"""

from ... import ops
from ...graph.symbolic import apply
from ...ops.masks import StepMaskOp
from ...ops.reshape import ReshapeOp
from .base_layer import Layer, is_integer


def _producer(tensor):
    history = tensor._keras_history
    return f"'{history[0].name}'" if history is not None else f"'{tensor.name}'"


class _Merge(Layer):
    """Shared checks: a list of at least two tensors of one shape, in one data format."""

    op_class = None
    exact_inputs = None
    supports_masking = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.op = self.op_class(self.name)

    def compute_mask(self, inputs, previous_mask=None):
        """As Keras 3: a step is kept where any input's mask keeps it (a maximum of the 0 / 1
        masks); no mask when an input has none."""
        masks = list(previous_mask or ())
        if not masks or any(m is None for m in masks):
            return None
        return apply(ops.MaximumOp(f"{self.name}/mask"), masks)

    def _check_inputs(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{self.context}: expects a list of tensors, got {inputs!r}")
        count = len(inputs)
        if count < 2 or (self.exact_inputs is not None and count != self.exact_inputs):
            wanted = (f"exactly {self.exact_inputs}" if self.exact_inputs is not None
                      else "at least 2")
            raise ValueError(f"{self.context}: expects {wanted} inputs, got {count}")
        formats = {t.data_format for t in inputs if len(t.dims) == 4 and t._format_fixed}
        if len(formats) > 1:
            raise ValueError(f"{self.context}: inputs mix data formats "
                             + ", ".join(f"{_producer(t)} {t.data_format}" for t in inputs))
        for tensor in inputs:
            if formats:
                tensor.read_as(next(iter(formats)), self.context)
        return list(inputs)

    def _unflatten(self, inputs, always):
        """A Flatten output is still the 4D buffer a following Dense reads in place: beside
        a plain (batch, features) tensor (or joined by Concatenate, `always`), it becomes one,
        in Keras's feature order."""
        flat = [bool(getattr(t, "flattened", False)) for t in inputs]
        if not any(flat) or (all(flat) and not always):
            return inputs
        return [apply(ReshapeOp(f"{self.name}/flat_{index}", (-1,), t.data_format, True), t)
                if flat[index] else t for index, t in enumerate(inputs)]

    def _check_shapes(self, inputs, skip_axis=None):
        first = inputs[0]
        for other in inputs[1:]:
            a, b = first.shape, other.shape
            same = len(a) == len(b) and all(
                x == y or i in (0, skip_axis) for i, (x, y) in enumerate(zip(a, b, strict=False)))
            if not same:
                where = "" if skip_axis is None else " except on the concatenation axis"
                raise ValueError(
                    f"{self.context}: inputs must have the same shape{where}, got "
                    f"{a} from {_producer(first)} and {b} from {_producer(other)}")

    def build(self, input_shape):
        pass

    # Keras's Multiply, Maximum and Minimum also put a neutral value at masked steps before
    # the op, and 0 after it: not done here yet, so masked inputs are refused
    masks_values = False

    # the keras.ops function that joins two inputs of different shapes which broadcast, as
    # Keras's merges do (EfficientNet's squeeze-and-excitation: (N, H, W, C) * (N, 1, 1, C))
    broadcast_function = None

    def _broadcasts(self, inputs):
        if self.broadcast_function is None or len(inputs) != 2:
            return False
        a, b = inputs[0].shape, inputs[1].shape
        return a != b and len(a) == len(b) and not any(
            getattr(t, "flattened", False) for t in inputs) and all(
            x == y or x == 1 or y == 1 for x, y in zip(a[1:], b[1:], strict=True))

    def call(self, inputs):
        inputs = self._unflatten(self._check_inputs(inputs), always=False)
        if self._broadcasts(inputs):
            from ..ops.binary import binary

            if any(getattr(t, "_keras_mask", None) is not None for t in inputs):
                raise ValueError(f"{self.context}: inputs with a mask are not supported when "
                                 "their shapes broadcast")
            return binary(self.broadcast_function, inputs[0], inputs[1])
        self._check_shapes(inputs)
        if self.masks_values and any(getattr(t, "_keras_mask", None) is not None
                                     for t in inputs):
            raise ValueError(f"{self.context}: inputs with a mask (Embedding(mask_zero=True), "
                             "Masking) are not supported yet by this merge; Add, Subtract, "
                             "Average and Concatenate take them")
        return apply(self.op, inputs)


class Add(_Merge):
    """Element-wise sum of its inputs (ResNet shortcuts): `Add()([x, y])`."""

    op_class = ops.AddOp
    broadcast_function = "add"


class Subtract(_Merge):
    """`Subtract()([a, b])` = a - b (exactly two inputs)."""

    op_class = ops.SubtractOp
    exact_inputs = 2


class Multiply(_Merge):
    """Element-wise product of its inputs."""

    op_class = ops.MultiplyOp
    masks_values = True
    broadcast_function = "multiply"


class Average(_Merge):
    """Element-wise mean of its inputs."""

    op_class = ops.AverageOp


class Maximum(_Merge):
    """Element-wise maximum of its inputs."""

    op_class = ops.MaximumOp
    masks_values = True


class Minimum(_Merge):
    """Element-wise minimum of its inputs."""

    op_class = ops.MinimumOp
    masks_values = True


class Concatenate(_Merge):
    """Joins its inputs along `axis` (default -1: the channels under channels_last, the
    features of (batch, features)); all other axes must agree."""

    def __init__(self, axis=-1, **kwargs):
        Layer.__init__(self, **kwargs)
        if not is_integer(axis):
            raise ValueError(f"{self.context}: argument axis must be an int, got {axis!r}")
        self.axis = int(axis)

    def compute_mask(self, inputs, previous_mask=None):
        """As Keras 3: the maximum of the masks; an input without one keeps every step, so
        then every step is kept (a mask of ones)."""
        masks = list(previous_mask or ())
        if all(m is None for m in masks):
            return None
        if any(m is None for m in masks):
            return apply(StepMaskOp(f"{self.name}/mask", None), self._output)
        return apply(ops.MaximumOp(f"{self.name}/mask"), masks)

    def call(self, inputs):
        inputs = self._unflatten(self._check_inputs(inputs), always=True)
        rank = len(inputs[0].shape)
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 0 < axis < rank:
            raise ValueError(f"{self.context}: argument axis must be a non-batch axis of the "
                             f"inputs of shape {inputs[0].shape}, got {self.axis}")
        self._check_shapes(inputs, skip_axis=axis)
        if axis != rank - 1 and any(t._keras_mask is not None for t in inputs):
            raise ValueError(f"{self.context}: concatenating masked tensors along axis "
                             f"{self.axis} is not supported yet; only along the last axis")
        logical = axis
        if rank == 4 and inputs[0].data_format == "channels_last":
            logical = {1: 2, 2: 3, 3: 1}[axis]  # Keras (N, H, W, C) -> oneDNN (N, C, H, W)
        self._output = apply(ops.ConcatenateOp(self.name, logical), inputs)
        return self._output

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def _functional(layer_class, doc):
    def merge(inputs, **kwargs):
        return layer_class(**kwargs)(inputs)

    merge.__name__ = merge.__qualname__ = layer_class.__name__.lower()
    merge.__doc__ = doc
    return merge


add = _functional(Add, "`add([x, y])`: Add()([x, y]).")
subtract = _functional(Subtract, "`subtract([a, b])`: Subtract()([a, b]).")
multiply = _functional(Multiply, "`multiply([x, y])`: Multiply()([x, y]).")
average = _functional(Average, "`average([x, y])`: Average()([x, y]).")
maximum = _functional(Maximum, "`maximum([x, y])`: Maximum()([x, y]).")
minimum = _functional(Minimum, "`minimum([x, y])`: Minimum()([x, y]).")


def concatenate(inputs, axis=-1, **kwargs):
    """`concatenate([x, y], axis=-1)`: Concatenate(axis)([x, y])."""
    return Concatenate(axis=axis, **kwargs)(inputs)


# Keras 2's keras.layers.merge also held Dot / dot: importable from here, exported by dot.py
from .dot import Dot, dot  # noqa: E402, F401

__all__ = ["Add", "Average", "Concatenate", "Maximum", "Minimum", "Multiply", "Subtract",
           "add", "average", "concatenate", "maximum", "minimum", "multiply", "subtract"]
