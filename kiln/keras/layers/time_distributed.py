"""TimeDistributed layer (`keras.layers.TimeDistributed`): a layer applied to every temporal
slice of a (batch, time, ...) input.

Keras loops over the time steps; here the wrapped layer's ops run once on the batch of all
slices: the input's plain bytes seen as (batch * time, ...) (ops/time_distributed.py), the
wrapped layer called on that view, its output seen as (batch, time, ...) again. So the wrapped
layer may be any layer (several ops, a fused activation, a Sequential model). Its weights are
this layer's weights, as in Keras ("time_distributed/dense/kernel"); the model lists only
TimeDistributed. Dropout draws independently for every element of every slice, as Keras's
does for each slice. A wrapped BatchNormalization in training normalizes every time step with
its own batch statistics and updates the moving ones once per step, as Keras's loop does
(ops/time_step_batch_norm.py).
"""

from ...graph.symbolic import apply
from ...ops.time_distributed import FoldTimeOp, UnfoldTimeOp
from ...ops.time_step_batch_norm import TimeStepBatchNormOp
from .base_layer import Layer
from .batch_normalization import BatchNormalization


class TimeDistributed(Layer):
    """Args:
        layer: a keras.layers.Layer instance, applied to every slice (batch, ...) of the
            input (batch, time, ...) with the same weights.

    Call arguments: inputs (at least 3D), training (passed on to the wrapped layer), mask (a
    (batch, time) mask: passed through, as Keras's compute_mask).

    Example:
        >>> y = TimeDistributed(Conv2D(8, 3))(Input((10, 32, 32, 3)))  # (None, 10, 30, 30, 8)
    """

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`keras.layers.Layer` instance. Received: {layer}")
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, (tuple, list)) or len(input_shape) < 3:
            raise ValueError(f"{self.context}: `TimeDistributed` Layer should be passed an "
                             f"`input_shape` with at least 3 dimensions, received: "
                             f"{input_shape}")

    def call(self, inputs, training=None, mask=None):
        del mask  # the wrapped layers take no mask yet; compute_mask passes it on
        shape = inputs.shape
        steps = shape[1]
        if steps is None:
            raise ValueError(f"{self.context}: the time axis of the input must have a known "
                             f"size, got shape {shape}")
        slice_format = getattr(self.layer, "data_format", None) or inputs.data_format
        fold = FoldTimeOp(f"{self.name}/fold", steps, inputs.data_format, slice_format)
        folded = apply(fold, inputs)
        folded.data_format = slice_format
        folded.dims = _with_batch(folded.dims, None if shape[0] is None else shape[0] * steps)
        # the slices take the data format of the first wrapped layer that reads one (a
        # BatchNormalization's axis), as a model input does
        folded._format_fixed = False
        kwargs = {} if training is None else {"training": training}
        inner = self.layer(folded, **kwargs)
        fold.out_format = folded.data_format
        if isinstance(inner, (list, tuple, dict)):
            raise ValueError(f"{self.context}: the wrapped layer {self.layer.name!r} must "
                             "return one tensor")
        unfold = UnfoldTimeOp(f"{self.name}/unfold", steps, inner.data_format,
                              inputs.data_format, inner.flattened)
        if self._per_step_batch_norm(inputs, inner, training):
            # batch statistics per time step, as Keras's loop over the steps computes them
            output = apply(TimeStepBatchNormOp(self.layer.op, fold, unfold, folded.data_format),
                           inputs)
        else:
            output = apply(unfold, inner, flattened=False)
        output.data_format = inputs.data_format
        output.dims = _with_batch(output.dims, shape[0])
        return output

    def _per_step_batch_norm(self, inputs, inner, training):
        """Whether the wrapped layer is a BatchNormalization, which TimeStepBatchNormOp
        trains (kiln's BatchNormalization takes (batch, features) and images: the inputs are
        (batch, time, features) and videos)."""
        return (isinstance(self.layer, BatchNormalization) and training is not False
                and inner.node is not None and inner.node.op is self.layer.op
                and len(inputs.shape) in (3, 5))

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        from ..saving.model_config import serialize_layer

        return {**super().get_config(), "layer": serialize_layer(self.layer)}

    @classmethod
    def from_config(cls, config):
        from ..saving.serialization import deserialize_layer

        config = dict(config)
        layer = deserialize_layer(config.pop("layer"), where="TimeDistributed config")
        return cls(layer, **config)


def _with_batch(dims, batch):
    return (batch, *dims[1:])
