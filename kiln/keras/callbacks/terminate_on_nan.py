"""TerminateOnNaN: stop training at the first batch whose loss is NaN or infinite."""

import numpy as np

from .callback import Callback


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or inf.

    Args:
        raise_error: False (default) sets `model.stop_training` and prints a message; True
            raises a RuntimeError at once, so the weights stay as that batch left them.
    """

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or np.isfinite(loss):
            return
        if self.raise_error:
            raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: "
                               f"{loss}. Terminating training immediately.")
        print(f"Batch {batch}: Invalid loss, terminating training")
        self.model.stop_training = True
