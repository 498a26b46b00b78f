"""`keras.optimizers.RMSprop` with Keras 3's rule (epsilon inside the square root), momentum
and the centered variant."""

from ...runtime.optimizers import RMSpropUpdater
from .base_optimizer import Optimizer


class RMSprop(Optimizer):
    """Args: learning_rate (0.001), rho (0.9), momentum (0.0), epsilon (1e-7), centered
    (False), and the base arguments (weight_decay, clipnorm, clipvalue, global_clipnorm,
    name; Keras 2's lr and decay)."""

    updater_class = RMSpropUpdater
    hyperparameters = {"rho": 0.9, "momentum": 0.0, "epsilon": 1e-7, "centered": False}
