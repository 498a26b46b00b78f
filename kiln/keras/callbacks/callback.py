"""The Callback base class and the hook names fit(), evaluate() and predict() call."""

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
