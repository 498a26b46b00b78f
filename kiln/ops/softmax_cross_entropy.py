"""Softmax + categorical cross-entropy, fused: the classic models' loss head.

Kept under its old name for callers that plan a softmax model by hand; the kernels live in
losses/categorical.py with the other cross-entropies (sparse labels, logits, label
smoothing, sample weights) and the plan decides the fusion from the graph.
"""

from .losses.categorical import CategoricalCrossentropyHead


class SoftmaxCrossEntropyOp(CategoricalCrossentropyHead):
    """The categorical cross-entropy head on a model that ends with a softmax.

    Args:
        name: a name for messages and plan labels.
        epsilon: Keras' backend epsilon used to clip probabilities in the loss.
    """

    def __init__(self, name, epsilon=1e-7):
        super().__init__(name, epsilon=epsilon)
