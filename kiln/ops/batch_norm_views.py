"""BatchNormalization on sequences (rank 3) and 5D tensors, on oneDNN's batch normalization.

The primitive normalizes over every logical dim but dim 1, in any 4D layout. The plain bytes
of a rank-3 or rank-5 tensor already are such a 4D tensor when the normalized axis is the last
one (seen as nhwc) or the second one (nchw):

    (N, T, C)          axis -1   seen as (N, C, 1, T)        nhwc
    (N, C, T)          axis 1    seen as (N, C, 1, T)        nchw
    (N, D, H, W, C)    axis -1   seen as (N, C, D*H, W)      nhwc
    (N, C, D, H, W)    axis 1    seen as (N, C, D*H, W)      nchw

so BatchNormOp (or SyncBatchNormOp) runs on that view as it is, with its batch statistics over
every axis but the channels, as Keras computes them, and its moving-statistics update. The
views are SequenceAsImageOp's: an input in another layout is reordered to plain first, and the
output and the gradients come back through the same views, without a copy.
"""

from .sequence_as_image import SequenceAsImageOp
from .tensor import CHANNELS_FIRST, CHANNELS_LAST


class ChannelViewBatchNormOp(SequenceAsImageOp):
    """Args: bn (the layer's BatchNormOp: its name and weights are this op's), axis (1 or -1,
    the channel axis), rank (3 or 5)."""

    per_image = False  # batch statistics mix the samples: never run in sub-batches

    def __init__(self, bn, axis, rank):
        if rank not in (3, 5):
            raise ValueError(f"BatchNormalization '{bn.name}': a channel view is for rank 3 "
                             f"or 5 inputs, got rank {rank}")
        data_format = CHANNELS_FIRST if axis == 1 else CHANNELS_LAST
        super().__init__(bn, data_format, "BatchNormalization", input_rank=rank)
        # the 5D dims each image view came from (a view merges D and H: no way back alone)
        self._volumes = {}

    @property
    def bn(self):
        return self.image_op

    def as_image(self, dims):
        if len(dims) != 5:
            return super().as_image(dims)
        if self.data_format == CHANNELS_LAST:
            n, d, h, w, c = dims
        else:
            n, c, d, h, w = dims
        image = (n, c, None if d is None or h is None else d * h, w)
        self._volumes[image] = tuple(dims)
        return image

    def as_sequence(self, dims):
        if self.input_rank == 5 and len(dims) == 4:
            return self._volumes[tuple(dims)]
        return super().as_sequence(dims)

    def output_dims(self, input_dims):
        self._check_rank(input_dims)
        self.image_op.output_dims(self.as_image(input_dims))
        return tuple(input_dims)

    def state_dims(self, input_dims):
        return self.image_op.state_dims(self.as_image(input_dims))
