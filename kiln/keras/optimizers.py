"""Keras optimizers (`keras.optimizers`), with Keras 2 defaults and update rules.

They accept both `lr=` (Keras 2) and `learning_rate=`, and `decay=`. The arithmetic runs in
one fused numba kernel over all weights (kiln.runtime.optimizers).
"""

from ..runtime import optimizers as updates


class Optimizer:
    updater_class = None
    defaults = {}

    def __init__(self, learning_rate=None, lr=None, decay=0.0, **kwargs):
        name = type(self).__name__
        unknown = set(kwargs) - set(self.defaults)
        if unknown:
            raise TypeError(f"{name}: unexpected keyword argument(s) {sorted(unknown)}; "
                            f"expected learning_rate, lr, decay, {', '.join(self.defaults)}")
        if learning_rate is not None and lr is not None:
            raise ValueError(f"{name}: give either learning_rate or lr, not both")
        rate = learning_rate if learning_rate is not None else lr
        self.learning_rate = float(self.default_learning_rate if rate is None else rate)
        if self.learning_rate < 0 or float(decay) < 0:
            raise ValueError(f"{name}: arguments learning_rate and decay must be >= 0, got "
                             f"{self.learning_rate} and {decay}")
        self.decay = float(decay)
        self.hyper = {**self.defaults, **kwargs}
        self.updater = None

    @property
    def lr(self):
        return self.learning_rate

    @property
    def iterations(self):
        return 0 if self.updater is None else self.updater.iterations

    def make_updater(self):
        if self.updater is None:
            self.updater = self.updater_class(self.learning_rate, decay=self.decay, **self.hyper)
        return self.updater

    def get_config(self):
        return {"name": type(self).__name__, "learning_rate": self.learning_rate,
                "decay": self.decay, **self.hyper}


class SGD(Optimizer):
    """Args: learning_rate (0.01), momentum (0.0), nesterov (False), decay."""
    updater_class = updates.SGDUpdater
    default_learning_rate = 0.01
    defaults = {"momentum": 0.0, "nesterov": False}


class RMSprop(Optimizer):
    """Args: learning_rate (0.001), rho (0.9), epsilon (1e-7), decay."""
    updater_class = updates.RMSpropUpdater
    default_learning_rate = 0.001
    defaults = {"rho": 0.9, "epsilon": 1e-7}


class Adadelta(Optimizer):
    """Args: learning_rate (1.0, Keras 2's default that the classic examples rely on; Keras 3
    changed it to 0.001), rho (0.95), epsilon (1e-7), decay."""
    updater_class = updates.AdadeltaUpdater
    default_learning_rate = 1.0
    defaults = {"rho": 0.95, "epsilon": 1e-7}


class Adam(Optimizer):
    """Args: learning_rate (0.001), beta_1 (0.9), beta_2 (0.999), epsilon (1e-7), decay."""
    updater_class = updates.AdamUpdater
    default_learning_rate = 0.001
    defaults = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}


ALL = {"sgd": SGD, "rmsprop": RMSprop, "adadelta": Adadelta, "adam": Adam}


def get(identifier):
    """An optimizer instance from an instance or a Keras name ('adam', 'sgd', ...)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in ALL:
        return ALL[identifier.lower()]()
    raise ValueError(f"compile: argument optimizer must be one of {sorted(ALL)} or an "
                     f"optimizer instance, got {identifier!r}")
