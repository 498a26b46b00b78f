"""Ops: each is a shape rule plus a forward and a backward planned onto oneDNN primitives
(or numba kernels where oneDNN has none)."""

from .activation import ActivationOp
from .batch_norm import BatchNormOp
from .concatenate import ConcatenateOp
from .conv1d import Conv1DOp
from .conv2d import Conv2DOp
from .conv2d_transpose import Conv2DTransposeOp
from .dense import DenseOp
from .dropout import DropoutOp
from .eltwise import FUSABLE
from .flatten import FlattenOp
from .max_pool_dropout import MaxPoolDropoutOp
from .merge import AddOp, AverageOp, MaximumOp, MinimumOp, MultiplyOp, SubtractOp
from .pooling import Pooling2DOp
from .softmax_cross_entropy import SoftmaxCrossEntropyOp

__all__ = ["ActivationOp", "AddOp", "AverageOp", "BatchNormOp", "ConcatenateOp", "Conv1DOp",
           "Conv2DOp", "Conv2DTransposeOp", "DenseOp", "DropoutOp", "FUSABLE", "FlattenOp",
           "MaxPoolDropoutOp", "MaximumOp", "MinimumOp", "MultiplyOp",
           "Pooling2DOp", "SoftmaxCrossEntropyOp", "SubtractOp"]
