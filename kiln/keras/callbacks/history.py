"""History: the per-epoch logs that fit() returns."""

from .callback import Callback


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

    def plot(self, filename="history.png", title=None):
        """Draws the loss and metric curves (train and validation, one panel per metric) to
        a PNG file and returns its name. kiln's addition to Keras's History; needs matplotlib
        (`pip install 'kiln[plot]'`)."""
        from ...plot import plot_history

        epochs = self.epoch if len(self.epoch) == max(map(len, self.history.values()),
                                                        default=0) else None
        return plot_history(self.history, filename, epochs=epochs, title=title)
