"""`keras.optimizers.Nadam`: Adam with Nesterov momentum and Keras 3's momentum cache."""

from ...runtime.optimizers import NadamUpdater
from .base_optimizer import Optimizer


class Nadam(Optimizer):
    """Args: learning_rate (0.001), beta_1 (0.9), beta_2 (0.999), epsilon (1e-7), and the base
    arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name; Keras 2's lr and
    decay)."""

    updater_class = NadamUpdater
    hyperparameters = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
