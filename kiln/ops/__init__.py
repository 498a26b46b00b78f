"""Ops: each is a shape rule plus a forward and a backward planned onto oneDNN primitives
(or numba kernels where oneDNN has none)."""

from .activation import Activation
from .batch_norm import BatchNorm
from .concatenate import Concatenate
from .conv1d import Conv1D
from .conv2d import Conv2D
from .conv2d_transpose import Conv2DTranspose
from .dense import Dense
from .dropout import Dropout
from .eltwise import FUSABLE
from .flatten import Flatten
from .max_pool_dropout import MaxPoolDropout
from .merge import Add, Average, Maximum, Minimum, Multiply, Subtract
from .pooling import Pooling2D
from .softmax_cross_entropy import SoftmaxCrossEntropy

__all__ = ["Activation", "Add", "Average", "BatchNorm", "Concatenate", "Conv1D", "Conv2D",
           "Conv2DTranspose", "Dense", "Dropout", "FUSABLE", "Flatten", "MaxPoolDropout",
           "Maximum", "Minimum", "Multiply",
           "Pooling2D", "SoftmaxCrossEntropy", "Subtract"]
