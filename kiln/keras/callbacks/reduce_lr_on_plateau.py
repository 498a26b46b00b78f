"""ReduceLROnPlateau: lower the learning rate when a monitored metric stops improving."""

import warnings

import numpy as np

from .learning_rate import get_learning_rate, set_learning_rate
from .monitor_callback import MonitorCallback


class ReduceLROnPlateau(MonitorCallback):
    """Multiplies the learning rate by `factor` after `patience` epochs without improvement.

    Args (Keras 3 names and defaults):
        monitor: Quantity to watch ("val_loss").
        factor: New rate = rate * factor; must be < 1 (0.1).
        patience: Epochs without improvement before reducing (10).
        verbose: 1 prints a message when reducing.
        mode: "auto", "min" or "max".
        min_delta: Smallest change that counts as an improvement (1e-4).
        cooldown: Epochs to wait after a reduction before counting again (0).
        min_lr: Lower bound on the learning rate (0).
        epsilon: Keras 2's name for `min_delta` (accepted with a warning, as Keras 2 did).

    The epoch logs get `learning_rate` (Keras 3's name; a monitor asking for `lr` finds it).
    """

    _missing_message = ("Learning rate reduction is conditioned on metric `{monitor}` which "
                        "is not available. Available metrics are: {available}.")

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            warnings.warn("ReduceLROnPlateau: argument epsilon is deprecated, use min_delta "
                          "instead.", stacklevel=2)
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword argument(s) "
                            f"{sorted(kwargs)}")
        super().__init__(monitor, mode, min_delta=min_delta)
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. "
                             f"Received factor={factor}")
        self.factor = factor
        self.min_lr = min_lr
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0

    def _reset(self):
        self.best = None
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._reset()

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs if logs is not None else {}
        logs["learning_rate"] = get_learning_rate(self)
        current = self.get_monitor_value(logs)
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and self._reduce(epoch):
                self.cooldown_counter = self.cooldown
                self.wait = 0

    def _reduce(self, epoch):
        old_lr = get_learning_rate(self)
        # compared in float32 as Keras does: a rate stored as float32 that rounds to min_lr
        # counts as reached
        if old_lr <= np.float32(self.min_lr):
            return False
        new_lr = max(old_lr * self.factor, self.min_lr)
        set_learning_rate(self, new_lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
        return True
