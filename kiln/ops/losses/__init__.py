"""Loss heads: the last kernel of a training step, one per model output that has a loss.

Each family is one module (shape rule, forward and backward in one numba kernel):
categorical.py (softmax / categorical / sparse cross-entropy), binary.py (sigmoid / binary
cross-entropy), elementwise.py (mse, mae, mape, msle, Huber, log-cosh, hinges, Poisson, KL
divergence), cosine.py (cosine similarity). metric_kernels.py accumulates Keras metrics from
the same buffers; label_checks.py stops bad labels before the step.
"""

from .binary import BinaryCrossentropyHead
from .categorical import CategoricalCrossentropyHead
from .cosine import CosineSimilarityHead
from .elementwise import KINDS as ELEMENTWISE_KINDS
from .elementwise import ElementwiseLossHead
from .head import CORRECT, LOSS, LossHead

__all__ = ["BinaryCrossentropyHead", "CORRECT", "CategoricalCrossentropyHead",
           "CosineSimilarityHead", "ELEMENTWISE_KINDS", "ElementwiseLossHead", "LOSS",
           "LossHead"]
