"""Training callbacks with Keras semantics (`keras.callbacks`)."""

from .callback import Callback
from .callback_list import CallbackList
from .early_stopping import EarlyStopping
from .history import History
from .lambda_callback import LambdaCallback
from .progbar_logger import ProgbarLogger

__all__ = ["Callback", "CallbackList", "EarlyStopping", "History", "LambdaCallback",
           "ProgbarLogger"]
