"""Drive a callback through epochs without a training loop, in kiln or in real Keras, so both
can be given the same logs and their decisions compared."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import keras_oracle  # noqa: E402,F401  (sets KERAS_BACKEND before Keras is imported)


class Optimizer:
    """A learning rate, as both frameworks' callbacks read and set it."""

    def __init__(self, learning_rate=0.1):
        self.learning_rate = learning_rate


class FakeModel:
    """Just enough of a model: an optimizer, stop_training, weights, and save_weights that
    writes a small file (so atomic renames and directory listings work)."""

    def __init__(self, learning_rate=0.1):
        self.optimizer = Optimizer(learning_rate)
        self.stop_training = False
        self.weights_value = 0
        self.saved = []
        self.built = True

    def get_weights(self):
        return [self.weights_value]

    def set_weights(self, weights):
        self.weights_value = weights[0]

    def save_weights(self, filepath, overwrite=True):
        Path(filepath).write_text(str(self.weights_value))
        self.saved.append(str(filepath))


def keras_optimizer(learning_rate=0.1):
    keras = keras_oracle.real_keras()
    return keras.optimizers.SGD(learning_rate=learning_rate)


def drive_epochs(callback, model, epoch_logs, batches=0, batch_logs=None):
    """Runs on_train_begin, then per epoch: begin, `batches` batch ends, end with a copy of
    its logs; stops when the model asks. Returns the epoch logs as the callback left them."""
    callback.set_model(model)
    callback.on_train_begin({})
    seen = []
    for epoch, logs in enumerate(epoch_logs):
        callback.on_epoch_begin(epoch, {})
        for batch in range(batches):
            callback.on_train_batch_end(batch, dict(batch_logs or {"loss": 1.0}))
        logs = dict(logs)
        model.weights_value = epoch
        callback.on_epoch_end(epoch, logs)
        seen.append(logs)
        if model.stop_training:
            break
    callback.on_train_end({})
    return seen
