"""What flows between ops in a plan: a oneDNN memory plus how Keras sees it."""

from dataclasses import dataclass

from ..binding.memory import Memory

CHANNELS_LAST = "channels_last"
CHANNELS_FIRST = "channels_first"


def keras_shape(dims, data_format, flattened=False):
    """The shape Keras shows for logical dims (N, C, H, W): (N, H, W, C) for channels_last,
    (N, C*H*W) once flattened; 2D dims are shown as they are. N may be None."""
    if len(dims) == 4:
        n, c, h, w = dims
        if flattened:
            return (n, c * h * w)
        return (n, h, w, c) if data_format == CHANNELS_LAST else (n, c, h, w)
    return tuple(dims)


def logical_dims(keras_shape, data_format):
    """Keras shape (batch first) -> oneDNN logical dims (N, C, H, W)."""
    if len(keras_shape) == 4 and data_format == CHANNELS_LAST:
        n, h, w, c = keras_shape
        return (n, c, h, w)
    return tuple(keras_shape)


@dataclass
class Tensor:
    """A plan tensor.

    Attributes:
        memory: the bytes and their oneDNN descriptor; dims are logical (N, C, H, W) whatever
            the layout.
        data_format: the order Keras uses for this tensor's channel and spatial axes. It never
            changes the memory layout, only how the tensor is shown to (or read from) the user.
        flattened: True when Keras sees (N, features) while the memory is still 4D; the
            feature order is (H, W, C) in both data formats, as Keras flattens.
        activation: the activation fused into the op that produced this tensor, if any.
        activation_grad_applied_downstream: set by a consumer (max pooling) that applies the
            activation's derivative to its smaller output gradient instead; the producer then
            skips its own activation backward.
        backward_reads_memory: whether the producer's backward reads this output (besides
            the activation derivative above). True unless the producer says otherwise.
        consumers: how many ops (and model outputs) read this tensor, set by the plan. A
            consumer may take over the activation's derivative only when it is the only one:
            the others' gradients still need it.
    """

    memory: Memory
    data_format: str = CHANNELS_LAST
    flattened: bool = False
    activation: str | None = None
    activation_grad_applied_downstream: bool = False
    backward_reads_memory: bool = True
    consumers: int = 1

    @property
    def dims(self):
        return self.memory.desc.dims

    @property
    def keras_shape(self):
        return keras_shape(self.dims, self.data_format, self.flattened)

    def with_memory(self, memory):
        return Tensor(memory, self.data_format, self.flattened)
