"""`keras.optimizers`: Keras 3's optimizers and learning-rate schedules on kiln's fused
update kernels, plus the Keras 2 lowercase aliases (`keras.optimizers.rmsprop(lr=1e-4)`)."""

from . import schedules
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .base_optimizer import Optimizer, UnknownArgumentError
from .lion import Lion
from .nadam import Nadam
from .rmsprop import RMSprop
from .serialization import ALL_OPTIMIZERS, deserialize, get, serialize
from .sgd import SGD

# Keras 2 exported every optimizer under a lowercase name too.
sgd, rmsprop, adagrad, adadelta, adam, adamax, nadam = (
    SGD, RMSprop, Adagrad, Adadelta, Adam, Adamax, Nadam)

__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "AdamW", "Nadam", "Adamax", "Adagrad",
           "Adadelta", "Lion", "schedules", "get", "serialize", "deserialize", "sgd",
           "rmsprop", "adagrad", "adadelta", "adam", "adamax", "nadam", "ALL_OPTIMIZERS",
           "UnknownArgumentError"]
