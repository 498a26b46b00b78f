"""`keras.optimizers.Adam`, with AMSGrad."""

from ...runtime.optimizers import AdamUpdater
from .base_optimizer import Optimizer


class Adam(Optimizer):
    """Args: learning_rate (0.001), beta_1 (0.9), beta_2 (0.999), epsilon (1e-7), amsgrad
    (False), and the base arguments (weight_decay, clipnorm, clipvalue, global_clipnorm,
    name; Keras 2's lr and decay)."""

    updater_class = AdamUpdater
    hyperparameters = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False}
