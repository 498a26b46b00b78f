"""Normalization layer (`keras.layers.Normalization`): features shifted and scaled to mean 0
and variance 1 by statistics given as arguments or learnt with `adapt(data)`."""

import numpy as np

from ...graph.symbolic import apply
from ...ops.normalization import NormalizationOp
from .. import initializers
from .arguments import is_integer
from .base_layer import Layer


class Normalization(Layer):
    """Args:
        axis: the one axis whose features keep their own statistics (default -1), or None
            for one mean and variance over everything; kiln does not support several axes yet.
        mean, variance: the statistics (a float or one value per feature); when omitted, the
            non-trainable weights "mean", "variance" (and Keras's "count") hold them and
            `adapt()` sets them.
        invert: apply the inverse, mean + x * sqrt(variance).
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        single = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
        if single is not None and not is_integer(single):
            raise ValueError(f"{self.context}: argument axis must be None, an int or a tuple of "
                             f"one int (several axes are not supported yet), got {axis!r}")
        if (mean is None) != (variance is None):
            raise ValueError(f"{self.context}: arguments mean and variance must be given "
                             f"together, got mean={mean!r}, variance={variance!r}")
        self.axis = () if single is None else (int(single),)
        self.input_mean, self.input_variance, self.invert = mean, variance, bool(invert)
        constants = None if mean is None else (mean, variance)
        self._constants = constants
        self.op = None

    @property
    def _axis(self):
        return self.axis[0] if self.axis else None

    def build(self, input_shape):
        rank = len(input_shape)
        axis = self._axis
        if axis is not None and (not -rank <= axis < rank or axis % rank == 0):
            raise ValueError(f"{self.context}: argument axis must name a feature axis of the "
                             f"input of shape {tuple(input_shape)}, got {axis}")
        self._features = 1 if axis is None else input_shape[axis]
        if self._constants is None:
            shape = () if axis is None else (self._features,)
            dims = NormalizationOp.statistics_dims(self._features)
            self.adapt_mean = self.add_weight("mean", shape, initializers.Zeros(), *dims["mean"],
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", shape, initializers.Ones(),
                                                  *dims["variance"], trainable=False)
            self.count = self.add_weight("count", (), initializers.Zeros(), *dims["count"],
                                         trainable=False)

    def adapt(self, data):
        """The mean and variance of `data` (an array, or an iterable of batches) over every
        axis but `axis`, as Keras computes them."""
        if self._constants is not None:
            raise ValueError(f"{self.context}: adapt() needs a layer built without mean and "
                             "variance arguments")
        batches = [np.asarray(data)] if hasattr(data, "shape") else [np.asarray(b) for b in data]
        if not batches:
            raise ValueError(f"{self.context}: adapt() received no data")
        if not self.built:
            self.build(batches[0].shape)
            self.built = True
        ndim = batches[0].ndim
        axis = None if self._axis is None else self._axis % ndim
        reduce = tuple(i for i in range(ndim) if i != axis)
        values = np.concatenate([b.astype(np.float64) for b in batches])
        self.adapt_mean.assign(values.mean(axis=reduce).astype(np.float32))
        self.adapt_variance.assign(values.var(axis=reduce).astype(np.float32))

    def call(self, inputs):
        if self.op is None:
            self.op = NormalizationOp(self.name, self._axis, inputs.data_format, self.invert,
                                      self._constants)
        return apply(self.op, inputs)

    def get_config(self):
        def listed(value):
            return value.tolist() if isinstance(value, np.ndarray) else value

        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": listed(self.input_mean), "variance": listed(self.input_variance)}

# Keras 2 imported BatchNormalization from `keras.layers.normalization`.
from .batch_normalization import BatchNormalization  # noqa: E402, F401
