"""EinsumDense layer (`keras.layers.EinsumDense`): a dense projection written as an einsum.

The kernel and bias shapes follow Keras 3's analysis of the equation exactly (the output shape
may leave axes as None, taken from the input). The equations that project trailing axes,
"<free><contracted>,<contracted><units>-><free><units>" ("ab,bc->ac", "abc,cd->abd",
multi-head attention's "abc,cde->abde" and "abcd,cde->abe", "...b,bc->...c"), run as one
BatchedMatmulOp whose kernel bytes are read as a (K, N) matrix; the bias is a broadcast add.
Other equations are refused by name.
"""

import re
import string

import numpy as np

from ...binding import constants as dnnl
from ...graph.symbolic import apply
from ...ops.activation import ActivationOp
from ...ops.batched_matmul import BatchedMatmulOp
from .. import activations, initializers, regularizers
from .base_layer import Layer


def _expanded(equation, rank):
    """The equation with a leading "..." replaced by letters for the input's rank, and
    whether the ellipsis was on the left (Keras also allows it on the right)."""
    match = re.fullmatch(r"([a-zA-Z.]+),([a-zA-Z]+)->([a-zA-Z.]+)", equation.replace(" ", ""))
    if match is None:
        return None
    first, kernel, output = match.groups()
    if "..." not in first and "..." not in output:
        return first, kernel, output, False
    if not (first.startswith("...") and output.startswith("...")):
        return None
    first, output = first[3:], output[3:]
    unused = [c for c in string.ascii_letters if c not in first + kernel + output]
    elided = "".join(unused[:max(rank - len(first), 0)])
    return elided + first, kernel, elided + output, True


def analyze(equation, bias_axes, input_shape, partial_output_shape, context):
    """(kernel shape, bias shape or None, output shape, contract), as Keras computes them;
    contract is the number of trailing input axes the planned product sums over (0 when the
    equation is not of the planned form)."""
    rank = len(input_shape)
    parts = _expanded(equation, rank)
    if parts is None:
        raise ValueError(f"{context}: argument equation {equation!r} is not of the form "
                         "'ab,bc->ac' (a '...' allowed before the input and output axes)")
    first, kernel_spec, output_spec, _ = parts
    if len(first) != rank:
        raise ValueError(f"{context}: the equation {equation!r} names {len(first)} input "
                         f"axes, the input has {rank} (shape {tuple(input_shape)})")
    known = list(partial_output_shape)
    output_shape = [input_shape[0], *known]
    elided = rank - len(equation.split(",")[0].replace("...", ""))
    if "..." in equation:  # the elided axes come right after the batch
        output_shape[1:1] = list(input_shape[1:elided])
    if len(output_shape) != len(output_spec):
        raise ValueError(f"{context}: argument output_shape {tuple(partial_output_shape)} "
                         f"does not fit the output axes {output_spec!r} of {equation!r}")
    sizes = {}
    for axis, size in zip(first, input_shape, strict=True):
        sizes[axis] = size
    for axis, size in zip(output_spec, output_shape, strict=True):
        if axis in first:
            if size is not None and size != sizes[axis]:
                raise ValueError(f"{context}: input shape and output shape do not match at "
                                 f"shared dimension '{axis}': input {sizes[axis]}, output "
                                 f"{size}")
        elif axis not in kernel_spec:
            raise ValueError(f"{context}: dimension '{axis}' of the output {output_spec!r} is "
                             f"in neither the input {first!r} nor the kernel {kernel_spec!r}")
        else:
            sizes[axis] = size
    full_output = tuple(sizes[a] if a in first else size
                        for a, size in zip(output_spec, output_shape, strict=True))
    for axis in kernel_spec:
        if axis not in sizes or axis not in first + output_spec:
            raise ValueError(f"{context}: kernel dimension '{axis}' of {equation!r} is in "
                             "neither the input nor the output; the kernel must be fully "
                             "specified")
    kernel_shape = tuple(int(sizes[a]) for a in kernel_spec)
    bias_shape = None
    if bias_axes is not None:
        for axis in bias_axes:
            if axis not in output_spec:
                raise ValueError(f"{context}: argument bias_axes {bias_axes!r}: dimension "
                                 f"'{axis}' is not in the output {output_spec!r}")
        start = min(output_spec.find(a) for a in bias_axes)
        bias_shape = tuple(int(full_output[start + i]) if a in bias_axes else 1
                           for i, a in enumerate(output_spec[start:]))
    contract = sum(1 for a in first if a in kernel_spec)
    free, units = first[:rank - contract], kernel_spec[contract:]
    planned = (contract >= 1 and units and free and first[rank - contract:]
               == kernel_spec[:contract] and output_spec == free + units)
    # Keras's compute_output_shape keeps the None a user gave for an input axis
    return kernel_shape, bias_shape, tuple(output_shape), contract if planned else 0


class EinsumDense(Layer):
    """Args: equation, output_shape (an int or a tuple, None for axes taken from the input),
    activation, bias_axes (output axes with a bias, None for none), kernel_initializer,
    bias_initializer, kernel_regularizer, bias_regularizer, activity_regularizer,
    kernel_constraint, bias_constraint. As Keras's, the kernel initializer's fans are the
    products of the kernel's input and output axes."""

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None,
                 gptq_unpacked_column_size=None, quantization_config=None, **kwargs):
        super().__init__(**kwargs)
        self._scope = None
        if not isinstance(equation, str):
            raise ValueError(f"{self.context}: argument equation must be a string such as "
                             f"'ab,bc->ac', got {equation!r}")
        self.equation = equation
        try:
            shape = (output_shape,) if isinstance(output_shape, int) else tuple(output_shape)
        except TypeError:
            raise ValueError(f"{self.context}: argument output_shape must be an int or a "
                             f"tuple of ints / None, got {output_shape!r}") from None
        if not all(d is None or (isinstance(d, (int, np.integer)) and d > 0) for d in shape):
            raise ValueError(f"{self.context}: argument output_shape must hold positive "
                             f"ints or None, got {output_shape!r}")
        self.partial_output_shape = tuple(None if d is None else int(d) for d in shape)
        if bias_axes is not None and not isinstance(bias_axes, str):
            raise ValueError(f"{self.context}: argument bias_axes must be a string of output "
                             f"axes or None, got {bias_axes!r}")
        self.bias_axes = bias_axes
        for argument, value in (("lora_rank", lora_rank), ("lora_alpha", lora_alpha),
                                ("gptq_unpacked_column_size", gptq_unpacked_column_size),
                                ("quantization_config", quantization_config)):
            if value is not None:
                raise ValueError(f"{self.context}: argument {argument} is not supported yet, "
                                 f"expected None, got {value!r}")
        self.activation, self.activation_function = activations.resolve(activation,
                                                                         self.context)
        self.kernel_initializer = initializers.get(kernel_initializer, self.context,
                                                   "kernel_initializer")
        self.bias_initializer = initializers.get(bias_initializer, self.context,
                                                 "bias_initializer")
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        self.kernel = self.bias = None

    # -- a part of another layer (MultiHeadAttention's query / key / value / output) ----------
    def nest_in(self, scope):
        """Make this layer's weights "<scope>/<name>/kernel", as Keras 3 names a sublayer's."""
        self._scope = scope

    @property
    def weight_prefix(self):
        return self.name if self._scope is None else f"{self._scope}/{self.name}"

    @property
    def context(self):
        return f"EinsumDense '{self.weight_prefix if '_scope' in self.__dict__ else self.name}'"

    # -- weights and call ----------------------------------------------------------------------
    def build(self, input_shape):
        kernel_shape, bias_shape, output_shape, contract = analyze(
            self.equation, self.bias_axes, tuple(input_shape), self.partial_output_shape,
            self.context)
        if not contract:
            raise NotImplementedError(
                f"{self.context}: equation {self.equation!r} is not planned yet; planned: "
                "'<free><contracted>,<contracted><units>-><free><units>' ('ab,bc->ac', "
                "'abc,cde->abde', 'abcd,cde->abe', '...b,bc->...c')")
        self.contract, self.input_rank = contract, len(input_shape)
        k = int(np.prod(kernel_shape[:contract]))
        n = int(np.prod(kernel_shape[contract:]))
        initializer = self.kernel_initializer

        def kernel_values(shape):  # fans of the (K, N) matrix: Keras's input / output axes
            return np.reshape(initializer((k, n)), shape)

        self.kernel = self.add_weight("kernel", kernel_shape, kernel_values, (k, n), dnnl.ab,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if bias_shape is not None:
            self.bias = self.add_weight(shape=bias_shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, name="bias")
        self.built = True

    def call(self, inputs):
        from .. import ops as keras_ops

        if len(inputs.shape) != self.input_rank:
            raise ValueError(f"{self.context}: expected an input of rank {self.input_rank} "
                             f"(as built), got shape {inputs.shape}")
        # a bias over exactly the kernel's output axes (the projections' "de" of
        # "abc,cde->abde") is the matmul's own bias argument; others are a broadcast add
        fused_bias = self.bias is not None \
            and tuple(self.bias.shape) == tuple(self.kernel.shape[self.contract:])
        op = BatchedMatmulOp(self.weight_prefix, inputs.data_format,
                             weight=("kernel", self.kernel.shape), contract=self.contract,
                             bias="bias" if fused_bias else None)
        output = apply(op, inputs)
        if self.bias is not None and not fused_bias:
            output = keras_ops.add(output, self.bias)
        if self.activation != "linear":
            output = apply(ActivationOp(f"{self.weight_prefix}/{self.activation}",
                                        self.activation), output)
        if self.activation_function is not None:
            output = self.activation_function(output)
        return output

    def compute_output_shape(self, input_shape):
        return analyze(self.equation, self.bias_axes, tuple(input_shape),
                       self.partial_output_shape, self.context)[2]

    def get_config(self):
        return {**super().get_config(), "output_shape": self.partial_output_shape,
                "equation": self.equation, "activation": self.activation_config(),
                "bias_axes": self.bias_axes, **self.weight_regularization_config(),
                "activity_regularizer": activity_config(self), "quantization_config": None}


def activity_config(layer):
    """EinsumDense and MultiHeadAttention write `activity_regularizer` even when None."""
    regularizer = layer.activity_regularizer
    return None if regularizer is None else regularizers.serialize(regularizer)
