"""EarlyStopping: stop training when a monitored metric stops improving."""

import warnings

from .callback import Callback


class EarlyStopping(Callback):
    """Stops training when a monitored metric has stopped improving.

    Args:
        monitor: Name of the epoch-end metric to watch.
        min_delta: Smallest change that counts as an improvement.
        patience: Number of epochs without improvement before stopping.
        verbose: 1 prints a message when stopping, 0 is silent.
        mode: `"min"`, `"max"`, or `"auto"` (inferred from the name:
            losses and errors decrease, accuracies and the like increase).
        baseline: Value the metric must beat; training stops after
            `patience` epochs without beating it.
        restore_best_weights: Whether to restore, at the end of training,
            the weights of the best epoch (via `model.get_weights()` and
            `model.set_weights()`).
        start_from_epoch: Number of warm-up epochs not monitored.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0,
                 mode="auto", baseline=None, restore_best_weights=False,
                 start_from_epoch=0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"EarlyStopping mode {mode!r} is unknown, "
                          "falling back to 'auto'.", stacklevel=2)
            mode = "auto"
        if mode == "auto":
            mode = _infer_mode(monitor)
        self.monitor = monitor
        self.mode = mode
        self.min_delta = abs(min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.on_train_begin()

    def on_train_begin(self, logs=None):
        # Reset so one instance can serve several fit() calls.
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_epoch = 0
        self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(
                f"Early stopping conditioned on metric {self.monitor!r} "
                "which is not available. Available metrics are: "
                f"{', '.join(logs or {})}", stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # Until something improves, the current weights are the best.
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch

        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            # Only restart the count once the baseline is beaten too.
            if self.baseline is None or self._is_improvement(
                    current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print("Restoring model weights from the end of the best "
                      f"epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def _is_improvement(self, value, reference):
        if reference is None:
            return True
        if self.mode == "min":
            return value + self.min_delta < reference
        return value - self.min_delta > reference


def _infer_mode(monitor):
    """Returns "max" for metrics that grow when better, else "min"."""
    name = monitor.removeprefix("val_").lower()
    increasing = ("acc", "auc", "precision", "recall", "f1", "iou")
    if "loss" not in name and any(part in name for part in increasing):
        return "max"
    return "min"
