"""The two views of Keras's TimeDistributed: a (N, T, ...) tensor seen as a batch of N*T
slices (N*T, ...), and the wrapped layer's (N*T, ...) result seen as (N, T, ...) again.

Keras applies the wrapped layer to every temporal slice; here the wrapped layer's own ops run
once on the batch of all N*T slices, so the time steps are no Python loop and no extra calls.
The plain row-major bytes of (N, T, a, b, ...) are already those of (N*T, a, b, ...): each
view reorders its input to that plain Keras order (no call when it already is, the usual case
for a model input, a Dense or a 3D / 5D tensor) and hands on the same bytes under the other
dims. A 4D tensor is an image with logical dims (N, C, H, W) (`tensor.py`): its Keras order is
nhwc in channels_last, nchw in channels_first, and a flattened one reads as nhwc, as Keras
flattens. Gradients come back through the same views.

The ops between the two views see a batch of N*T: the plan sizes each buffer from the dims an
op hands on, so nothing else needs to know (neither view is `per_image`, so no sub-batch
crosses them, and a loss head sees the (N, T, ...) output).
"""

from .base import Op
from .reshape import keras_layout
from .tensor import Tensor, keras_shape, logical_dims


def keras_order(builder, memory, dims, data_format, flattened, label, backward=False):
    """`memory` reordered (no call when it already is) to the plain layout whose bytes are
    the tensor in Keras's row-major order, kept: a view of it follows."""
    desc = keras_layout(dims, data_format, flattened, memory.desc.data_type)
    return builder.keep(builder.reorder(memory, desc, label, backward=backward))


class _TimeView(Op):
    """A view between the Keras shapes (N, T, *rest) and (N*T, *rest)."""

    def __init__(self, name, steps, in_format, out_format, in_flattened=False):
        self.name, self.steps = name, steps
        self.in_format, self.out_format = in_format, out_format
        self.in_flattened = in_flattened

    def out_shape(self, shape):
        raise NotImplementedError

    def output_dims(self, input_dims):
        shape = keras_shape(input_dims, self.in_format, self.in_flattened)
        return logical_dims(self.out_shape(shape), self.out_format)

    def forward(self, builder, x, need_input_grad=True):
        plain = keras_order(builder, x.memory, x.dims, x.data_format, x.flattened,
                            f"{self.name} to Keras order")
        out_dims = self.output_dims(x.dims)
        output = plain.view(keras_layout(out_dims, self.out_format, False,
                                         plain.desc.data_type))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = keras_order(builder, output_grad, out_dims, self.out_format, False,
                               f"{self.name} gradient to Keras order", backward=True)
            input_grad = grad.view(keras_layout(x.dims, x.data_format, x.flattened,
                                                grad.desc.data_type))
            if grad is output_grad and not builder.writable(output_grad):
                builder.share(input_grad)
            return input_grad

        # activation=None: no consumer takes over the producer's activation derivative
        # through the view; the producer applies its own.
        return Tensor(output, self.out_format), backward


class FoldTimeOp(_TimeView):
    """(N, T, *rest) -> (N*T, *rest): the input of the wrapped layer.

    Args: name (the TimeDistributed layer's), steps (T), in_format (the data format of the
    input tensor, which decides a 4D input's Keras order), out_format (the one the wrapped
    layer reads its slices in)."""

    def out_shape(self, shape):
        if len(shape) < 3:
            raise ValueError(f"TimeDistributed '{self.name}': expected an input of at least "
                             f"3 dimensions (batch, time, ...), got shape {tuple(shape)}")
        n, steps, *rest = shape
        if steps != self.steps:
            raise ValueError(f"TimeDistributed '{self.name}': expected {self.steps} time "
                             f"steps, got shape {tuple(shape)}")
        return (n * steps, *rest)


class UnfoldTimeOp(_TimeView):
    """(N*T, *rest) -> (N, T, *rest): the wrapped layer's output back in time steps.

    Args: as FoldTimeOp; in_format and in_flattened say how Keras sees the wrapped layer's
    output (Flatten's is a flattened image), out_format is the TimeDistributed output's."""

    def out_shape(self, shape):
        batch, *rest = shape
        if batch % self.steps and batch > 1:
            raise ValueError(f"TimeDistributed '{self.name}': a batch of {batch} slices is "
                             f"not a whole number of {self.steps} time steps")
        # shape rules are probed with a batch of one slice: any batch >= 1 works there
        return (max(batch // self.steps, 1), self.steps, *rest)
