"""Symbolic tensors and nodes: what Keras layers' `call()` produce while a model is traced.

Calling a layer on SymbolicTensors records a Node (one op applied to a tuple of input tensors,
producing one output tensor): together they form a DAG from the model inputs to its outputs,
which `topology.py` orders and the plan compiler walks. Dims are oneDNN's logical order
(N, C, H, W) or (N, F) with the batch left as None.
"""

from ..ops.tensor import CHANNELS_LAST, keras_shape, logical_dims


class Node:
    """One op applied to `inputs` (a tuple of SymbolicTensors), producing `output`."""

    __slots__ = ("op", "inputs", "output")

    def __init__(self, op, inputs, output=None):
        self.op = op
        self.inputs = tuple(inputs)
        self.output = output

    def __repr__(self):
        return f"<Node {type(self.op).__name__} '{getattr(self.op, 'name', '?')}'>"


# Who is tracing right now ("MyLayer 'my_layer'"), innermost last: the front end pushes a
# layer's context while its call() runs, so a refusal names the layer.
tracing = []
# keras.ops functions by Python operator name ("add", "getitem", ...), registered by the front
# end: `x + 1` inside call() is `keras.ops.add(x, 1)`.
OPERATORS = {}


def _refuse_numpy(tensor, function):
    where = tracing[-1] if tracing else "a model being built"
    raise TypeError(f"{where}: {function} was called on the symbolic tensor '{tensor.name}' "
                    f"of shape {tensor.shape}; symbolic tensors have no values while the "
                    "model is traced, use keras.ops instead (e.g. keras.ops.sum instead of "
                    "np.sum) so the operation becomes part of the model")


def _operator(name, *arguments):
    function = OPERATORS.get(name)
    if function is None:
        return NotImplemented
    return function(*arguments)


class SymbolicTensor:
    """Args:
        dims: logical dims with batch None, e.g. (None, 32, 26, 26).
        data_format: how Keras orders this tensor's axes.
        flattened: Keras sees (None, features) over 4D dims.
        node: the Node that produces it (None for a model input).
        name: for messages (a model input's name, or the producing op's).
        dtype: 'float32', or 'int32' / 'int64' for a model input of integers (token ids);
            every op's output is float32 (the plan's activation type).
        mask: the SymbolicTensor of this tensor's Keras mask (batch, steps), or None; see
            docs/architecture.md, "Masks".

    Variable sizes (`keras.Input((None, 4))`): `dims` always hold concrete sizes (a probe size
    where the model's input has None, see keras/models/variable_shapes.py) so every shape
    rule and build() computes as for a fixed shape; `variable_axes` names the axes of the
    Keras shape that are None, which `shape` shows as None outside a layer's call().
    """

    def __init__(self, dims, data_format=CHANNELS_LAST, flattened=False, node=None, name=None,
                 dtype="float32"):
        self.dims = tuple(dims)
        self.dtype = dtype
        self._keras_mask = None
        self.variable_axes = frozenset()  # axes of `shape` that are None (any size)
        self.data_format = data_format
        self.flattened = flattened
        self.node = node
        self.name = name or (node.op.name if node is not None else "input")
        self._keras_history = None  # (layer, node index, tensor index), set by the front end
        self._format_fixed = node is not None

    def read_as(self, data_format, context):
        """Check that a layer reading this tensor in `data_format` agrees with it. A model
        input takes the data format of the first such layer (`keras.Input((1, 28, 28))` then
        a channels_first Conv2D); any other disagreement is an error naming the layer."""
        if len(self.dims) == 4 and data_format != self.data_format:
            if self._format_fixed:
                raise ValueError(f"{context}: data_format {data_format!r} differs from its "
                                 f"input's {self.data_format!r}; use one data_format per model")
            shape = self.concrete_shape
            self.data_format = data_format
            self.dims = logical_dims(shape, data_format)
        self._format_fixed = True

    @property
    def op(self):
        return self.node.op if self.node is not None else None

    @property
    def shape(self):
        """The Keras shape, batch first (None unless the input fixed a batch size; None on
        the variable axes too, except inside a layer's build() / call(), which compute with
        the probe sizes)."""
        shape = keras_shape(self.dims, self.data_format, self.flattened)
        if self.variable_axes and not tracing:
            shape = tuple(None if axis in self.variable_axes else size
                          for axis, size in enumerate(shape))
        return shape

    @property
    def concrete_shape(self):
        """The Keras shape with the sizes the dims hold (probe sizes on variable axes)."""
        return keras_shape(self.dims, self.data_format, self.flattened)

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<SymbolicTensor name={self.name} shape={self.shape}>"

    # -- numpy is refused (it would need values), operators are keras.ops --------------------
    # a value only a loss reads (keras.ops reduced it to one per sample or for the batch);
    # what is computed from it is one too
    loss_value = False

    __array_priority__ = 1000  # numpy defers `array + tensor` to the tensor's operators

    def __array__(self, dtype=None, copy=None):
        _refuse_numpy(self, "numpy.asarray")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and ufunc.__name__ in _UFUNC_OPERATORS and not kwargs:
            return _operator(_UFUNC_OPERATORS[ufunc.__name__], *inputs)
        _refuse_numpy(self, f"numpy.{ufunc.__name__}")

    def __array_function__(self, func, types, args, kwargs):
        _refuse_numpy(self, f"numpy.{func.__name__}")

    def __bool__(self):
        _refuse_numpy(self, "bool() (an `if` on a tensor)")

    def __add__(self, other):
        return _operator("add", self, other)

    def __radd__(self, other):
        return _operator("add", other, self)

    def __sub__(self, other):
        return _operator("subtract", self, other)

    def __rsub__(self, other):
        return _operator("subtract", other, self)

    def __mul__(self, other):
        return _operator("multiply", self, other)

    def __rmul__(self, other):
        return _operator("multiply", other, self)

    def __truediv__(self, other):
        return _operator("divide", self, other)

    def __rtruediv__(self, other):
        return _operator("divide", other, self)

    def __pow__(self, other):
        return _operator("power", self, other)

    def __matmul__(self, other):
        return _operator("matmul", self, other)

    def __rmatmul__(self, other):
        return _operator("matmul", other, self)

    def __neg__(self):
        return _operator("negative", self)

    def __abs__(self):
        return _operator("abs", self)

    def __getitem__(self, key):
        return _operator("getitem", self, key)

    # comparisons (not ==, which stays identity: tensors are dict keys and list members)
    def __gt__(self, other):
        return _operator("greater", self, other)

    def __ge__(self, other):
        return _operator("greater_equal", self, other)

    def __lt__(self, other):
        return _operator("less", self, other)

    def __le__(self, other):
        return _operator("less_equal", self, other)


# numpy ufuncs applied to an array and a tensor (`array * tensor`) that are the operators
_UFUNC_OPERATORS = {"add": "add", "subtract": "subtract", "multiply": "multiply",
                    "true_divide": "divide", "divide": "divide", "matmul": "matmul"}


def apply(op, inputs, flattened=None):
    """The SymbolicTensor produced by running `op` on `inputs` (one tensor, or a list for ops
    of several inputs), using the op's shape rule."""
    many = getattr(op, "arity", 1) is None
    tensors = list(inputs) if many else [inputs]
    batch = tensors[0].dims[0]
    # shape rules need a concrete batch; any value works
    probes = [(1, *t.dims[1:]) for t in tensors]
    out = op.output_dims(probes if many else probes[0])
    first = tensors[0]
    keep_flat = all(t.flattened for t in tensors) and len(out) == len(first.dims)
    node = Node(op, tensors)
    node.output = SymbolicTensor((batch, *out[1:]), first.data_format,
                                 keep_flat if flattened is None else flattened, node)
    if any(t.loss_value for t in tensors):
        node.output.loss_value = True
    return node.output
