"""GlobalAveragePooling1D and GlobalMaxPooling1D layers (`keras.layers`): the 2D global
pooling of the sequence seen as an image of height 1 (ops/sequence_as_image.py), no copy."""

from ...graph.symbolic import apply
from ...ops.global_pooling import GlobalPooling2DOp
from ...ops.masks import MaskedStepMeanOp
from ...ops.sequence_as_image import SequenceAsImageOp
from .. import backend
from .base_layer import Layer
from .sequences import check_sequence


class _GlobalPooling1D(Layer):
    mode = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.normalize_data_format(data_format, self.context)
        if not isinstance(keepdims, bool):
            raise ValueError(f"{self.context}: argument keepdims must be True or False, got "
                             f"{keepdims!r}")
        self.keepdims = keepdims
        self.op = SequenceAsImageOp(GlobalPooling2DOp(self.name, self.mode, keepdims),
                                    self.data_format, type(self).__name__)

    def build(self, input_shape):
        check_sequence(input_shape, self.context)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean of each channel over the steps: (N, C), or (N, 1, C) / (N, C, 1) with
    keepdims. Args: data_format, keepdims (default False).

    Call arguments: inputs; mask (batch, steps): the mean is over the steps it keeps, as
    Keras (given by Embedding(mask_zero=True) or Masking; not with keepdims yet).

    Example:
        >>> x = GlobalAveragePooling1D()(Conv1D(8, 3)(Input((100, 16))))  # -> (None, 8)
    """

    mode = "avg"

    def call(self, inputs, mask=None):
        if mask is None:
            return apply(self.op, inputs)
        if self.keepdims:
            raise NotImplementedError(f"{self.context}: keepdims=True with a mask (from "
                                      "Embedding(mask_zero=True) or Masking) is not supported "
                                      "yet; Keras averages over the unmasked steps only")
        # the mean over the steps the mask keeps (docs/architecture.md, "Masks")
        return apply(MaskedStepMeanOp(self.name, self.data_format), [inputs, mask])


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum of each channel over the steps (gradient to the argmax). Args:
    data_format, keepdims (default False). Its call takes no mask: Keras 3's layer does not
    support masking (it warns and takes the maximum over every step)."""

    mode = "max"


GlobalAvgPool1D, GlobalMaxPool1D = GlobalAveragePooling1D, GlobalMaxPooling1D  # other spellings
__all__ = ["GlobalAveragePooling1D", "GlobalAvgPool1D", "GlobalMaxPool1D", "GlobalMaxPooling1D"]
