"""`keras.optimizers.Adagrad`: per-weight rates from the sum of squared gradients."""

from ...runtime.optimizers import AdagradUpdater
from .base_optimizer import Optimizer


class Adagrad(Optimizer):
    """Args: learning_rate (0.001), initial_accumulator_value (0.1), epsilon (1e-7), and the
    base arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name; Keras 2's lr and
    decay)."""

    updater_class = AdagradUpdater
    hyperparameters = {"initial_accumulator_value": 0.1, "epsilon": 1e-7}
