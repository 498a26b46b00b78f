"""Layer: the Keras base class. `build()` creates weights, `call()` emits engine ops on a
symbolic tensor, `get_config()` describes the layer for serialization."""

import numbers
import re
from collections import defaultdict

import numpy as np

from ... import ops
from ...graph.symbolic import SymbolicTensor, apply
from ...plan.parameters import ParameterStore

_name_counts = defaultdict(int)


def reset_names():
    _name_counts.clear()


def unique_name(class_name):
    base = re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", class_name).lower()
    base = re.sub(r"(\d)d$", r"\1d", base)
    count = _name_counts[base]
    _name_counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


class Weight:
    """A layer weight as Keras shows it (e.g. a conv kernel (kh, kw, in, out)); the value lives
    in the model's ParameterStore in whatever layout oneDNN chose."""

    def __init__(self, store, path, shape, trainable=True):
        self.store, self.path, self.shape, self.trainable = store, path, tuple(shape), trainable

    @property
    def name(self):
        return self.path

    def numpy(self):
        return self.store.get_value(self.path).reshape(self.shape)

    def assign(self, value):
        value = np.asarray(value, dtype=np.float32)
        if value.shape != self.shape:
            raise ValueError(f"weight '{self.path}': expected shape {self.shape}, "
                             f"got {value.shape}")
        self.store.set_value(self.path, value)

    def __repr__(self):
        return f"<Weight {self.path} shape={self.shape}>"


class Layer:
    """Base layer.

    Args:
        name: unique name (generated from the class name when omitted).
        input_shape: for the first layer of a Sequential model, the shape without the batch.
        trainable: whether fit() updates its weights (only True is supported by the engine).
        dtype: only 'float32' (mixed precision comes through a policy).
    """

    def __init__(self, name=None, input_shape=None, trainable=True, dtype=None, **kwargs):
        cls = type(self).__name__
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        input_dim = kwargs.pop("input_dim", None)
        self.name = name or unique_name(cls)
        if kwargs:
            raise TypeError(f"{self.context}: unexpected keyword argument(s) {sorted(kwargs)}")
        if input_shape is None and batch_input_shape is not None:
            input_shape = tuple(batch_input_shape)[1:]
        if input_shape is None and input_dim is not None:
            input_shape = (input_dim,)
        self.input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self.trainable = trainable
        if dtype not in (None, "float32"):
            raise ValueError(f"{cls} '{self.name}': argument dtype must be 'float32', "
                             f"got {dtype!r}")
        self.built = False
        self._store = None
        self._weights = []
        self._input_tensor = None
        self.output_shape = None

    @property
    def context(self):
        """How error messages name this layer: "Conv2D 'conv2d_1'"."""
        return f"{type(self).__name__} '{self.name}'"

    # -- weights ------------------------------------------------------------------------------
    def add_weight(self, name, shape, initializer, dims, tag):
        """Create a weight of Keras shape `shape`, stored as logical `dims` with user `tag`."""
        if self._store is None:
            self._store = ParameterStore()
        path = f"{self.name}/{name}"
        value = np.asarray(initializer(tuple(shape)), dtype=np.float32)
        if value.shape != tuple(shape):
            raise ValueError(f"{self.context}: initializer of '{name}' returned shape "
                             f"{value.shape}, expected {tuple(shape)}")
        self._store.add(path, dims, tag, value)
        weight = Weight(self._store, path, shape)
        self._weights.append(weight)
        return weight

    def add_kernel_and_bias(self, kernel_shape, parameter_dims):
        """The kernel (and bias, with use_bias) of a conv or dense layer, in Keras shapes;
        `parameter_dims` is the op's {name: (logical dims, user tag)}."""
        self.kernel = self.add_weight("kernel", kernel_shape, self.kernel_initializer,
                                      *parameter_dims["kernel"])
        if self.use_bias:
            self.bias = self.add_weight("bias", (kernel_shape[-1],), self.bias_initializer,
                                        *parameter_dims["bias"])

    def apply_with_activation(self, op, inputs):
        """Run `op` (which fuses relu/tanh/sigmoid), then any activation it could not fuse."""
        output = apply(op, inputs)
        if self.activation not in ops.FUSABLE and self.activation != "linear":
            output = apply(ops.Activation(f"{self.name}/{self.activation}", self.activation),
                           output)
        return output

    @property
    def weights(self):
        return list(self._weights)

    trainable_weights = weights

    def get_weights(self):
        return [w.numpy() for w in self._weights]

    def set_weights(self, weights):
        if len(weights) != len(self._weights):
            raise ValueError(f"{self.context}: expected {len(self._weights)} weight arrays "
                             f"{[w.shape for w in self._weights]}, got {len(weights)}")
        for weight, value in zip(self._weights, weights, strict=True):
            weight.assign(value)

    def count_params(self):
        return int(sum(np.prod(w.shape) for w in self._weights))

    # -- tracing ------------------------------------------------------------------------------
    def build(self, input_shape):
        self.built = True

    def call(self, inputs):
        raise NotImplementedError

    def __call__(self, inputs):
        if not isinstance(inputs, SymbolicTensor):
            raise TypeError(f"{self.context}: layers are called on symbolic tensors while a "
                            "model is built; use model.predict() for numpy arrays")
        if not self.built:
            self._input_tensor = inputs
            self.build(inputs.shape)
            self.built = True
        output = self.call(inputs)
        self.output_shape = output.shape
        return output

    def compute_output_shape(self, input_shape):
        return self.output_shape

    # -- serialization ------------------------------------------------------------------------
    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": "float32"}
        if self.input_shape_arg is not None:
            config["batch_input_shape"] = (None, *self.input_shape_arg)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def is_integer(value):
    """Python and numpy integers (Keras accepts `Dense(y.max() + 1)`), but not bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def pair(value, context, argument):
    """Keras accepts an int or a pair for kernel_size, strides, pool_size."""
    if is_integer(value):
        return (int(value), int(value))
    try:
        a, b = value
        return (int(a), int(b))
    except (TypeError, ValueError):
        raise ValueError(f"{context}: argument {argument} must be an int or a pair of ints, "
                         f"got {value!r}") from None


def check_choice(value, choices, context, argument):
    if not isinstance(value, str) or value.lower() not in choices:
        raise ValueError(f"{context}: argument {argument} must be one of {list(choices)}, "
                         f"got {value!r}")
    return value.lower()
