"""EarlyStopping: stop training when a monitored metric stops improving (Keras 3 semantics)."""

from .monitor_callback import MonitorCallback


class EarlyStopping(MonitorCallback):
    """Stops training when a monitored metric has stopped improving.

    Args:
        monitor: Name of the epoch-end metric to watch ("val_acc" and "val_accuracy" find
            each other).
        min_delta: Smallest change that counts as an improvement.
        patience: Number of epochs without improvement before stopping.
        verbose: 1 prints a message when stopping, 0 is silent.
        mode: "min", "max", or "auto" (from the metric: losses and errors decrease,
            accuracies and the like increase).
        baseline: Value the metric must beat; training stops after `patience` epochs
            without beating it.
        restore_best_weights: Whether to restore, at the end of training, the weights of the
            best epoch (via `model.get_weights()` / `model.set_weights()`). As in Keras, they
            are restored only if some epoch was monitored.
        start_from_epoch: Number of warm-up epochs not monitored.
    """

    _missing_message = ("Early stopping conditioned on metric `{monitor}` which is not "
                        "available. Available metrics are: {available}")

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = 0

    def on_train_begin(self, logs=None):
        # Reset so one instance can serve several fit() calls.
        super().on_train_begin(logs)
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
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
            if self.baseline is None or self._is_improvement(current, self.baseline):
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
                print("Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)
