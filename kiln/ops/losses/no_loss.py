"""MetricsOnlyHead: an output without a loss that compiled metrics read (Keras 3's
`compile(loss=[..., None], metrics=[..., ["mae"]])`, the way to report an extra output now
that `add_metric` is gone), or an output whose compiled loss a `compute_loss` override left
out. It plans no loss and no gradient: it only leaves the output in the plain (N, features)
buffer and the labels buffer the metric kernels read, as a loss head does.
"""

from .head import LossHead


class MetricsOnlyHead(LossHead):
    """Args: name (the output's, for messages); sparse: the labels are class ids (N,), as a
    sparse metric or the loss it stands in for reads them."""

    per_element = True  # an image-shaped output is read as its flattened pixels

    def __init__(self, name, sparse=False):
        super().__init__(name)
        self.sparse = sparse

    def label_shape(self, output_shape):
        return tuple(output_shape[:-1]) if self.sparse else tuple(output_shape)

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        _, outputs = self.plain(builder, x, self.name)
        return outputs, self.stats(), None
