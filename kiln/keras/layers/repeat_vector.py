"""RepeatVector layer (`keras.layers.RepeatVector`): (batch, features) -> (batch, n, features),
the vector repeated at every step (an encoder's summary handed to a decoder).

The matrix is the image (N, features, 1, 1) and its repeat the nearest up-sampling of that
image by (1, n) in nhwc, which is the (N, n, features) sequence byte for byte
(ops/sequence_as_image.py); oneDNN's resampling backward sums the n gradients.
"""

from ...graph.symbolic import apply
from ...ops.flatten import FlattenToMatrixOp
from ...ops.resize import UpSampling2DOp
from ...ops.sequence_as_image import SequenceAsImageOp
from ...ops.tensor import CHANNELS_LAST
from .base_layer import Layer
from .sequences import positive_count


class RepeatVector(Layer):
    """Args: n (int > 0): the number of steps.

    Example:
        >>> x = RepeatVector(5)(Dense(8)(Input((3,))))  # -> (None, 5, 8)
    """

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = positive_count(n, self.context, "n")
        self.op = SequenceAsImageOp(UpSampling2DOp(self.name, (1, self.n)), CHANNELS_LAST,
                                    "RepeatVector", input_rank=2)

    def build(self, input_shape):
        if len(input_shape) != 2:
            raise ValueError(f"{self.context}: expected a 2D input (batch, features), got "
                             f"shape {tuple(input_shape)}")

    def call(self, inputs):
        if inputs.flattened:  # Flatten's free view of an image: the real matrix first
            inputs = apply(FlattenToMatrixOp(f"{self.name}/features"), inputs, flattened=False)
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "n": self.n}
