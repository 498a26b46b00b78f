"""`keras.optimizers.Lion`: sign of an interpolated momentum."""

from ...runtime.optimizers import LionUpdater
from .base_optimizer import Optimizer, is_number


class Lion(Optimizer):
    """Args: learning_rate (0.001), beta_1 (0.9, in (0, 1]), beta_2 (0.99), and the base
    arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name; Keras 2's lr and
    decay)."""

    updater_class = LionUpdater
    hyperparameters = {"beta_1": 0.9, "beta_2": 0.99}

    def _check_hyperparameters(self, owner, hyper):
        beta_1 = hyper["beta_1"]
        if not is_number(beta_1) or not 0 < beta_1 <= 1:
            raise ValueError(f"{owner}: argument beta_1 must be in the (0, 1] range "
                             f"(otherwise the optimizer degenerates to SignSGD), got {beta_1!r}")
