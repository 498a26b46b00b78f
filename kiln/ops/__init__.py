"""Ops: each is a shape rule plus a forward and a backward planned onto oneDNN primitives
(or numba kernels where oneDNN has none)."""

from .activation import Activation
from .conv2d import Conv2D
from .dense import Dense
from .dropout import Dropout
from .eltwise import FUSABLE
from .flatten import Flatten
from .max_pool_dropout import MaxPoolDropout
from .pooling import Pooling2D
from .softmax_cross_entropy import SoftmaxCrossEntropy

__all__ = ["Activation", "Conv2D", "Dense", "Dropout", "FUSABLE", "Flatten", "MaxPoolDropout",
           "Pooling2D", "SoftmaxCrossEntropy"]
