"""`keras.optimizers.Adamax`: Adam with the infinity norm."""

from ...runtime.optimizers import AdamaxUpdater
from .base_optimizer import Optimizer


class Adamax(Optimizer):
    """Args: learning_rate (0.001), beta_1 (0.9), beta_2 (0.999), epsilon (1e-7), and the base
    arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name; Keras 2's lr and
    decay)."""

    updater_class = AdamaxUpdater
    hyperparameters = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
