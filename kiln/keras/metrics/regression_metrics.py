"""MeanSquaredError, MeanAbsoluteError and RootMeanSquaredError metrics (Keras 3): the
per-sample mean over the last axis, weighted-averaged over samples (RMSE: its square root)."""

import numpy as np

from ...ops.losses import metric_kernels as kernels
from ..losses import functions
from .reduction_metrics import MeanMetricWrapper


class _MeanError(MeanMetricWrapper):
    _kind = kernels.SQUARED_ERROR

    def plan_update(self, builder, view, weights):
        if view.loss.head.sparse:
            raise ValueError(f"metric '{self.name}': the output's labels are class ids "
                             "(a sparse loss); an error metric needs one target per output")
        builder.add_forward(builder.kernel(
            kernels.mean_error_kernel, (view.outputs, view.label_rows, weights, self._kind,
                                        self.state), f"{self.name} metric"))
        return None


class MeanSquaredError(_MeanError):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(functions.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(_MeanError):
    _kind = kernels.ABSOLUTE_ERROR

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(functions.mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(_MeanError):
    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(functions.mean_squared_error, name=name, dtype=dtype)

    def result(self):
        return float(np.sqrt(super().result()))
