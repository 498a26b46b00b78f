"""Training callbacks with Keras semantics (`keras.callbacks`)."""

import sys
import warnings

from kiln.keras.utils import Progbar

# Every hook a callback can implement, in the order fit() calls them.
_HOOK_NAMES = (
    "on_train_begin", "on_epoch_begin", "on_train_batch_begin",
    "on_train_batch_end", "on_epoch_end", "on_train_end",
    "on_batch_begin", "on_batch_end",
    "on_test_begin", "on_test_batch_begin", "on_test_batch_end",
    "on_test_end",
    "on_predict_begin", "on_predict_batch_begin", "on_predict_batch_end",
    "on_predict_end",
)


class Callback:
    """Base class for objects notified during fit, evaluate and predict.

    Subclasses override the hooks they need; all hooks do nothing here.
    `logs` is a dict of metric values (e.g. `{"loss": 0.23}`); at epoch end
    it also holds validation metrics prefixed with `val_`.

    Attributes:
        model: The model being trained, set by `set_model`.
        params: Training parameters (`verbose`, `epochs`, `steps`), set by
            `set_params`.
    """

    def __init__(self):
        self.model = None
        self.params = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None):
        """Called at the start of `fit`."""

    def on_train_end(self, logs=None):
        """Called at the end of `fit`."""

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of epoch `epoch` (0-based)."""

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of an epoch; `logs` holds the epoch metrics."""

    def on_batch_begin(self, batch, logs=None):
        """Alias of `on_train_batch_begin`, kept for old Keras code."""

    def on_batch_end(self, batch, logs=None):
        """Alias of `on_train_batch_end`, kept for old Keras code."""

    def on_train_batch_begin(self, batch, logs=None):
        """Called before training batch `batch` (0-based, per epoch)."""
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        """Called after a training batch; `logs` holds its metrics."""
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs=None):
        """Called at the start of `evaluate` (and of validation)."""

    def on_test_end(self, logs=None):
        """Called at the end of `evaluate`; `logs` holds the metrics."""

    def on_test_batch_begin(self, batch, logs=None):
        """Called before an evaluation batch."""

    def on_test_batch_end(self, batch, logs=None):
        """Called after an evaluation batch."""

    def on_predict_begin(self, logs=None):
        """Called at the start of `predict`."""

    def on_predict_end(self, logs=None):
        """Called at the end of `predict`."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Called before a prediction batch."""

    def on_predict_batch_end(self, batch, logs=None):
        """Called after a prediction batch."""


class CallbackList(Callback):
    """Forwards every hook to a list of callbacks, in order.

    Args:
        callbacks: Callbacks to notify.
        add_history: Whether to append a `History` if none is given.
        add_progbar: Whether to append a `ProgbarLogger` if none is given.
        model: Model passed to every callback's `set_model`.
        **params: Passed to every callback's `set_params` if given.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False,
                 model=None, **params):
        super().__init__()
        self.callbacks = list(callbacks or ())
        if add_history and not any(
                isinstance(c, History) for c in self.callbacks):
            self.callbacks.append(History())
        if add_progbar and not any(
                isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        super().set_params(params)
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model):
        super().set_model(model)
        for callback in self.callbacks:
            callback.set_model(model)


def _forward(hook_name):
    def forward(self, *args, **kwargs):
        for callback in self.callbacks:
            getattr(callback, hook_name)(*args, **kwargs)
    forward.__name__ = forward.__qualname__ = hook_name
    forward.__doc__ = f"Calls `{hook_name}` on every callback."
    return forward


# Generated rather than written out: sixteen identical loops add nothing.
for _hook_name in _HOOK_NAMES:
    setattr(CallbackList, _hook_name, _forward(_hook_name))


class History(Callback):
    """Records the epoch-end metrics; `fit` returns this object.

    Attributes:
        history: Dict mapping each metric name to its list of per-epoch
            values, e.g. `{"loss": [0.5, 0.3], "val_loss": [0.6, 0.4]}`.
        epoch: List of the (0-based) epochs recorded.
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)
        # Like Keras, expose the latest history as `model.history`.
        if self.model is not None:
            self.model.history = self


class ProgbarLogger(Callback):
    """Prints an "Epoch i/n" header and a progress bar or line per epoch.

    See `Progbar` for the output formats. Batch metrics are averaged over
    the epoch, weighted by `logs["size"]` (the batch's sample count) when
    the batch logs provide it. The epoch-end logs add the metrics batches
    do not report, such as `val_loss`.

    Args:
        stateful_metrics: Names of metrics displayed as given (e.g. values
            that are already running means) instead of averaged.
        dynamic: Whether to redraw the bar in place; `None` means only if
            the stream is a terminal.
        stream: Text stream to write to; `None` means `sys.stdout`, looked
            up at each write.
    """

    # Batch log entries that describe the batch rather than measure it.
    _NON_METRIC_KEYS = frozenset({"batch", "size"})

    def __init__(self, stateful_metrics=None, dynamic=None, stream=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or ())
        self.dynamic = dynamic
        self.stream = stream
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self.seen = 0
        self.progbar = None
        self._averaged_names = set()
        self._called_in_fit = False

    def set_params(self, params):
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else verbose
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def on_train_begin(self, logs=None):
        # Validation inside fit() must not draw its own bar.
        self._called_in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        self._reset_progbar()
        if self.verbose:
            stream = self.stream if self.stream is not None else sys.stdout
            stream.write(f"Epoch {epoch + 1}/{self.epochs}\n")
            stream.flush()

    def on_train_batch_end(self, batch, logs=None):
        self._update_progbar(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize_progbar(logs)

    def on_train_end(self, logs=None):
        self._called_in_fit = False

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._reset_progbar()

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._update_progbar(batch, logs)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize_progbar(logs)

    def on_predict_begin(self, logs=None):
        self._reset_progbar()

    def on_predict_batch_end(self, batch, logs=None):
        # Predict batch logs hold outputs, not metrics.
        self._update_progbar(batch, None)

    def on_predict_end(self, logs=None):
        self._finalize_progbar(None)

    def _reset_progbar(self):
        self.seen = 0
        self._averaged_names = set()
        self.progbar = Progbar(
            target=self.target, verbose=self.verbose,
            stateful_metrics=self.stateful_metrics, unit_name="step",
            dynamic=self.dynamic, stream=self.stream)

    def _update_progbar(self, batch, logs):
        if not self.verbose:
            return
        if self.progbar is None:
            self._reset_progbar()
        logs = logs or {}
        self.seen = batch + 1  # `batch` is 0-based.
        values = [(name, value) for name, value in logs.items()
                  if name not in self._NON_METRIC_KEYS]
        self._averaged_names.update(
            name for name, _ in values if name not in self.stateful_metrics)
        self.progbar.update(self.seen, values, finalize=False,
                            weight=logs.get("size"))

    def _finalize_progbar(self, logs):
        if not self.verbose:
            return
        if self.progbar is None:
            self._reset_progbar()
        if self.target is None:
            # Unknown step count: the first epoch tells us.
            self.target = self.progbar.target = self.seen
        # Metrics averaged over the batches keep their running mean.
        values = [(name, value) for name, value in (logs or {}).items()
                  if name not in self._averaged_names
                  and name not in self._NON_METRIC_KEYS]
        self.progbar.update(self.target, values, finalize=True)


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


class LambdaCallback(Callback):
    """Builds a callback from plain functions, e.g. lambdas.

    Each argument is a function with the hook's arguments (without
    `self`), e.g. `on_epoch_end=lambda epoch, logs: print(logs["loss"])`.
    Hooks not listed (e.g. `on_test_end`) may be passed by keyword too.

    Raises:
        TypeError: If a keyword argument is not a hook name.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None,
                 on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None,
                 **other_hooks):
        super().__init__()
        unknown = sorted(set(other_hooks) - set(_HOOK_NAMES))
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hook(s) {unknown}; "
                            f"expected names from {list(_HOOK_NAMES)}")
        hooks = dict(other_hooks, on_epoch_begin=on_epoch_begin,
                     on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end)
        for name, function in hooks.items():
            if function is not None:
                # Instance attributes shadow the no-op methods.
                setattr(self, name, function)
