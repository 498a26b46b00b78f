"""What a loss head is to the plan: one model output, its labels, its sample weights, the
reduced loss, the natural accuracy and the gradient w.r.t. the output, all in one kernel.

oneDNN has no losses, so every head is a numba kernel over plain row-major (N, features)
buffers: the output is reordered to that layout once (a no-op for a Dense output), labels
and sample weights are numpy arrays the plan fills each step. A head whose loss is a
cross-entropy may also apply the model's final softmax / sigmoid itself (`fuses`): the plan
then skips that activation and hands the head its input, and the head's probabilities are the
model's output, so the loss gradient w.r.t. the logits costs one pass (p - y) instead of a
log, a division and an activation backward.

Reduction is Keras' "sum_over_batch_size": sum over samples of sample_weight * loss divided by
the number of samples, whatever the weights. The gradient is scaled by the output's
`loss_weight` (the weighted total is what the step minimizes).
"""

import numpy as np

from ...binding import constants as dnnl
from ...binding.memory import Memory, MemoryDesc

# stats slots every head kernel writes each step
LOSS = 0       # the reduced loss of this batch (unweighted by loss_weight)
CORRECT = 1    # sum over samples of the head's natural accuracy (unweighted by sample weight)


class LossHead:
    """Base of the loss heads.

    Args:
        name: the loss name as the user gave it (for messages).
        from_logits: the model output is logits (Keras' `from_logits`).
    Attributes set by subclasses:
        fuses: 'softmax' / 'sigmoid' when the head can apply that final activation itself.
        sparse: labels are class ids of shape (N,) instead of one row per sample.
        accuracy: the accuracy the kernel counts in stats[CORRECT] ('categorical',
            'sparse_categorical', 'binary' or None).
    """

    fuses = None
    sparse = False
    accuracy = None
    # the loss is a mean over every element of a sample (binary cross-entropy, mse, ...), so
    # an image-shaped output (a segmentation map) is the same loss over its flattened pixels
    per_element = False
    # the loss reduces over one class axis (cross-entropy): an image output is one row of
    # classes per pixel (the head then has `class_axis` and `plan_rows`)
    class_rows = False

    def __init__(self, name, from_logits=False):
        self.name = name
        self.from_logits = from_logits

    def can_fuse(self, activation):
        """Whether the head applies `activation` (the output node's) itself."""
        return not self.from_logits and activation is not None and activation == self.fuses

    def class_axis(self, shape, data_format):
        """The axis the loss reduces over for an output of Keras shape `shape`: the last."""
        return len(shape) - 1

    def label_shape(self, output_shape):
        """Labels per sample for an output of Keras shape `output_shape` (without batch)."""
        return tuple(output_shape)

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        """Plan the loss on Tensor `x` (the model output, or the input of the fused
        activation when `fused`). Returns (output array (N, features): the model's output
        values, stats float64 array, gradient Memory w.r.t. `x` or None)."""
        raise NotImplementedError

    # -- helpers for subclasses -------------------------------------------------------------
    def plain(self, builder, x, label):
        """`x` as a plain (N, features) f32 buffer and its array view. A 4D output of a
        per-element loss is reordered to the Keras order of its axes first (its features are
        then the flattened image, as the labels are)."""
        if len(x.dims) == 4 and (self.per_element or x.flattened):
            desc = MemoryDesc.with_tag(x.dims, dnnl.f32, keras_order_tag(x))
            image = builder.reorder(x.memory, desc, f"{label} output to plain")
            n, features = x.dims[0], int(np.prod(x.dims[1:]))
            memory = Memory(MemoryDesc.with_tag((n, features), dnnl.f32, dnnl.ab),
                            image.storage)
            return memory, memory.as_array().reshape(n, features)
        if len(x.dims) in (3, 5) and self.per_element:
            # a sequence or a video (TimeDistributed): its logical dims are Keras's axes,
            # so its plain row-major bytes are the (N, features) matrix
            plain = builder.reorder(x.memory, MemoryDesc.with_tag(x.dims, dnnl.f32),
                                    f"{label} output to plain")
            n, features = x.dims[0], int(np.prod(x.dims[1:]))
            memory = plain.view(MemoryDesc.with_tag((n, features), dnnl.f32, dnnl.ab))
            return builder.keep(memory), memory.as_array().reshape(n, features)
        if len(x.dims) != 2:
            raise ValueError(f"loss '{label}': kiln computes this loss on outputs of shape "
                             f"(batch, features), got dims {x.dims}")
        desc = MemoryDesc.with_tag(x.dims, dnnl.f32, dnnl.ab)
        memory = builder.reorder(x.memory, desc, f"{label} output to plain")
        return memory, memory.as_array().reshape(x.dims)

    @staticmethod
    def buffer(builder, dims):
        memory = builder.allocate(MemoryDesc.with_tag(dims, dnnl.f32, dnnl.ab))
        return memory, memory.as_array().reshape(dims)

    @staticmethod
    def stats():
        return np.zeros(2, dtype=np.float64)


def keras_order_tag(x):
    """The plain layout of a 4D Tensor in the order Keras shows its axes (nhwc for
    channels_last, and for a flattened tensor, whose features are (h, w, c); else nchw)."""
    return dnnl.acdb if x.data_format == "channels_last" or x.flattened else dnnl.abcd
