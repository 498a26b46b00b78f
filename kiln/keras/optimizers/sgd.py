"""`keras.optimizers.SGD`: gradient descent with optional (Nesterov) momentum."""

from ...runtime.optimizers import SGDUpdater
from .base_optimizer import Optimizer, is_number


class SGD(Optimizer):
    """Args: learning_rate (0.01), momentum (0.0, in [0, 1]), nesterov (False), and the
    base arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name; Keras 2's lr
    and decay)."""

    updater_class = SGDUpdater
    default_learning_rate = 0.01
    hyperparameters = {"momentum": 0.0, "nesterov": False}

    def _check_hyperparameters(self, owner, hyper):
        momentum = hyper["momentum"]
        if not is_number(momentum) or not 0 <= momentum <= 1:
            raise ValueError(f"{owner}: argument momentum must be a float between [0, 1], "
                             f"got {momentum!r}")
        hyper["momentum"] = float(momentum)
