"""Optimizer updates as fused, multi-threaded numba kernels over the packed parameter arena,
one module per update rule (Keras 3's rules; Keras 2's `decay` kept on top)."""

from .adadelta import AdadeltaUpdater, adadelta_kernel
from .adagrad import AdagradUpdater, adagrad_kernel
from .adam import AdamUpdater, adam_kernel
from .adamax import AdamaxUpdater, adamax_kernel
from .clipping import squared_norm
from .lion import LionUpdater, lion_kernel
from .nadam import NadamUpdater, nadam_kernel
from .rmsprop import RMSpropUpdater, rmsprop_kernel, rmsprop_plain_kernel
from .sgd import SGDUpdater, sgd_kernel
from .updater import Updater

KERNELS = (sgd_kernel, rmsprop_kernel, rmsprop_plain_kernel, adam_kernel, nadam_kernel,
           adamax_kernel, adagrad_kernel, adadelta_kernel, lion_kernel, squared_norm)

__all__ = ["Updater", "SGDUpdater", "RMSpropUpdater", "AdamUpdater", "NadamUpdater",
           "AdamaxUpdater", "AdagradUpdater", "AdadeltaUpdater", "LionUpdater", "KERNELS"]
