"""`keras.optimizers.AdamW`: Adam with decoupled weight decay (w -= w * weight_decay * lr
before each step, as every Keras 3 optimizer applies `weight_decay`)."""

from ...runtime.optimizers import AdamUpdater
from .base_optimizer import Optimizer


class AdamW(Optimizer):
    """Args: learning_rate (0.001), weight_decay (0.004, required), beta_1 (0.9), beta_2
    (0.999), epsilon (1e-7), amsgrad (False), and the base arguments (clipnorm, clipvalue,
    global_clipnorm, name; Keras 2's lr and decay)."""

    updater_class = AdamUpdater
    hyperparameters = {"weight_decay": 0.004, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7,
                       "amsgrad": False}

    def _check_hyperparameters(self, owner, hyper):
        if self.weight_decay is None:
            raise ValueError(f"{owner}: argument weight_decay must be a float, got None")
