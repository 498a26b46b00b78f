"""`keras.optimizers.Adadelta`.

Its learning_rate defaults to 1.0, Keras 2's default, not Keras 3's 0.001: the classic
mnist_cnn example calls `Adadelta()` and was tuned with 1.0 (with 0.001 it barely trains).
"""

from ...runtime.optimizers import AdadeltaUpdater
from .base_optimizer import Optimizer


class Adadelta(Optimizer):
    """Args: learning_rate (1.0, see the module docstring), rho (0.95), epsilon (1e-7), and
    the base arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name; Keras 2's lr
    and decay)."""

    updater_class = AdadeltaUpdater
    default_learning_rate = 1.0
    hyperparameters = {"rho": 0.95, "epsilon": 1e-7}
