"""Optimizer: the Keras 3 optimizer API over one of kiln's fused runtime updaters.

Keras 3 is the spec (names, defaults, configs, errors), and the Keras 2 spellings the classic
example scripts use are accepted: `lr=` for `learning_rate=`, `decay=` with Keras 2's meaning
lr / (1 + decay * iterations) (Keras 3 ignores it with a warning; the cifar10_cnn example relies
on it), `optimizer.lr`, and `keras.backend.get_value` / `set_value` on the learning rate.

The front end only checks arguments and keeps the learning rate; the arithmetic lives in the
runtime updater (kiln.runtime.optimizers), which asks this object for the rate once per step.
"""

import inspect
import math
import numbers
import re

import numpy as np

from ..layers.base_layer import unique_name
from .scalar_variable import ScalarVariable
from .schedules import LearningRateSchedule
from .schedules import deserialize as deserialize_schedule
from .schedules import serialize as serialize_schedule

# Keras 3's base arguments, in its order, with their defaults.
BASE_ARGUMENTS = {"learning_rate": None, "weight_decay": None, "clipnorm": None,
                  "clipvalue": None, "global_clipnorm": None, "use_ema": False,
                  "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                  "loss_scale_factor": None, "gradient_accumulation_steps": None,
                  "name": None}
# Accepted at their defaults only: kiln does not implement these yet.
UNSUPPORTED = ("use_ema", "ema_overwrite_frequency", "loss_scale_factor",
               "gradient_accumulation_steps")
KERAS2_ARGUMENTS = ("lr", "decay")


class UnknownArgumentError(TypeError, ValueError):
    """An argument the optimizer does not know: a TypeError as Python reports unexpected
    keywords, and a ValueError as Keras 3 reports them, so either `except` catches it."""


def is_number(value):
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and \
        not isinstance(value, bool)


class Optimizer:
    """Base class. A subclass sets `updater_class`, `default_learning_rate` and
    `hyperparameters` ({name: default} in Keras 3's argument order) and may override
    `_check_hyperparameters`."""

    updater_class = None
    default_learning_rate = 0.001
    hyperparameters = {}

    def __init_subclass__(cls, **kwargs):
        """Give each optimizer its Keras 3 signature (for help() and editors), since
        __init__ itself binds the arguments generically."""
        super().__init_subclass__(**kwargs)
        defaults = {"learning_rate": cls.default_learning_rate, **cls.hyperparameters,
                    **{key: value for key, value in BASE_ARGUMENTS.items()
                       if key not in cls.hyperparameters and key != "learning_rate"}}
        keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
        cls.__signature__ = inspect.Signature(
            [inspect.Parameter(key, keyword, default=value) for key, value in defaults.items()]
            + [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])

    def __init__(self, *args, **kwargs):
        owner = type(self).__name__
        arguments = self._bind_arguments(owner, args, kwargs)
        self.decay = self._take_keras2_arguments(owner, arguments)
        self.name = arguments["name"] or unique_name(owner)
        self._take_base_arguments(owner, arguments)
        self._hyper = {key: arguments[key] for key in self.hyperparameters
                       if key not in BASE_ARGUMENTS}
        if self._hyper.get("epsilon", 0.0) is None:  # Keras 2's "None means K.epsilon()"
            self._hyper["epsilon"] = 1e-7
        self._check_hyperparameters(owner, self._hyper)
        for key, value in self._hyper.items():
            setattr(self, key, value)
        self._schedule = None
        self._rate = np.float32(0.0)
        rate = arguments["learning_rate"]
        self._set_learning_rate(self.default_learning_rate if rate is None else rate)
        self._excluded_ids, self._excluded_pattern = set(), None
        self._updater = self.updater_class(
            self._rate_at, decay=self.decay, weight_decay=self.weight_decay,
            clipnorm=self.clipnorm, clipvalue=self.clipvalue,
            global_clipnorm=self.global_clipnorm, decay_filter=self._uses_weight_decay,
            **self._hyper)
        # one object each, as Keras's variables: references kept by callbacks stay live
        self._learning_rate_variable = ScalarVariable(
            f"{self.name}/learning_rate", lambda: self._rate_at(self._updater.iterations),
            self._set_learning_rate, "float32")
        self._iterations_variable = ScalarVariable(
            f"{self.name}/iteration", lambda: self._updater.iterations,
            self._set_iterations, "int64")

    # -- arguments ----------------------------------------------------------------------------
    def _bind_arguments(self, owner, args, kwargs):
        order = ["learning_rate", *self.hyperparameters,
                 *(key for key in BASE_ARGUMENTS if key not in self.hyperparameters
                   and key != "learning_rate")]
        expected = ", ".join([*order, *KERAS2_ARGUMENTS])
        if len(args) > len(order):
            raise TypeError(f"{owner}: takes at most {len(order)} positional arguments "
                            f"({', '.join(order)}), got {len(args)}")
        given = dict(zip(order, args, strict=False))  # fewer args than names
        for key, value in kwargs.items():
            if key in given:
                raise TypeError(f"{owner}: got multiple values for argument {key!r}")
            given[key] = value
        unknown = sorted(set(given) - set(order) - set(KERAS2_ARGUMENTS))
        if unknown:
            raise UnknownArgumentError(f"{owner}: unexpected keyword argument(s) "
                                       f"{', '.join(map(repr, unknown))}; expected {expected}")
        return {**BASE_ARGUMENTS, **self.hyperparameters, **given}

    @classmethod
    def _take_keras2_arguments(cls, owner, arguments):
        """Moves `lr` into `learning_rate`; returns Keras 2's `decay` (0 without it)."""
        lr, decay = arguments.pop("lr", None), arguments.pop("decay", None)
        if lr is not None:
            if arguments["learning_rate"] is not None:
                raise ValueError(f"{owner}: give either learning_rate or lr (its Keras 2 "
                                 "name), not both")
            arguments["learning_rate"] = lr
        return cls._non_negative(owner, "decay", 0.0 if decay is None else decay)

    def _take_base_arguments(self, owner, arguments):
        """Clipping and weight decay, checked as Keras does; the arguments kiln does not
        implement are accepted only at their defaults."""
        for argument in UNSUPPORTED:
            if arguments[argument] != BASE_ARGUMENTS[argument]:
                raise NotImplementedError(f"{owner}: argument {argument} is not supported by "
                                          f"kiln yet (got {arguments[argument]!r})")
        clips = {key: arguments[key] for key in ("clipnorm", "clipvalue", "global_clipnorm")}
        if sum(value is not None for value in clips.values()) > 1:
            raise ValueError(
                f"{owner}: only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                f"set. Received: clipnorm={clips['clipnorm']}, clipvalue={clips['clipvalue']}"
                f", global_clipnorm={clips['global_clipnorm']}")
        for key in (*clips, "weight_decay"):
            value = arguments[key]
            setattr(self, key, None if value is None else self._non_negative(owner, key, value))
        for key in ("use_ema", "ema_momentum", *UNSUPPORTED[1:]):
            setattr(self, key, arguments[key])

    @staticmethod
    def _non_negative(owner, argument, value):
        if not is_number(value) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{owner}: argument {argument} must be a finite number >= 0, "
                             f"got {value!r}")
        return float(value)

    def _check_hyperparameters(self, owner, hyper):
        """Subclasses check their own arguments' ranges here."""

    # -- learning rate ------------------------------------------------------------------------
    def _set_learning_rate(self, rate):
        owner = type(self).__name__
        if isinstance(rate, LearningRateSchedule) or (callable(rate) and not is_number(rate)
                                                      and not isinstance(rate, ScalarVariable)):
            self._schedule = rate
            return
        if self._schedule is not None:
            raise TypeError(
                f"{owner}: this optimizer was created with a `LearningRateSchedule` object "
                "as its `learning_rate` constructor argument, hence its learning rate is not "
                "settable. If you need the learning rate to be settable, you should "
                "instantiate the optimizer with a float `learning_rate` argument.")
        value = np.asarray(rate.numpy() if isinstance(rate, ScalarVariable) else rate)
        if value.shape != () or not np.issubdtype(value.dtype, np.number) or \
                not math.isfinite(float(value)) or float(value) < 0:
            raise ValueError(f"{owner}: argument learning_rate must be a float >= 0, a "
                             f"LearningRateSchedule or a callable, got {rate!r}")
        self._rate = np.float32(value)

    def _rate_at(self, iterations):
        """The learning rate for the step after `iterations` steps (before Keras 2 decay)."""
        schedule = self._schedule
        if schedule is None:
            return self._rate
        if isinstance(schedule, LearningRateSchedule):
            return schedule(iterations)
        return schedule()  # Keras 3 callables take no argument

    @property
    def learning_rate(self):
        """The current learning rate as a variable-like object: float() / np.asarray() /
        get_value read it, `assign` / set_value write it (a TypeError under a schedule)."""
        return self._learning_rate_variable

    @learning_rate.setter
    def learning_rate(self, rate):
        self._set_learning_rate(rate)

    lr = learning_rate  # Keras 2's name

    @property
    def iterations(self):
        """Steps taken so far (Keras's `iterations` variable)."""
        return self._iterations_variable

    def _set_iterations(self, value):
        self._updater.iterations = int(value)

    # -- weight decay exclusions --------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Keep weight decay off the weights in `var_list` and off every weight whose name
        contains one of `var_names` (e.g. ["bias"]), as Keras. Call it before training."""
        if self._updater.layout is not None:
            raise ValueError(f"{type(self).__name__}: `exclude_from_weight_decay()` can only "
                             "be configured before the optimizer is built.")
        self._excluded_ids = {weight.path for weight in (var_list or ())}
        self._excluded_pattern = "|".join(sorted(set(var_names))) if var_names else None

    def _uses_weight_decay(self, parameter_name):
        if parameter_name in self._excluded_ids:
            return False
        short = str(parameter_name).rsplit("/", 1)[-1]
        return self._excluded_pattern is None or not re.search(self._excluded_pattern, short)

    # -- the engine's side --------------------------------------------------------------------
    def make_updater(self):
        """The runtime updater the training plans call once per step (always the same one:
        every plan of a model shares the optimizer's state)."""
        return self._updater

    def get_state(self):
        """{name: numpy array}: 'iterations', 'learning_rate' (its current value), and each
        slot arena (Keras 3's slot names, e.g. Adam's 'momentum' and 'velocity') once the
        optimizer has stepped. set_state() of it resumes bit for bit."""
        state = self._updater.get_state()
        state["learning_rate"] = np.array(self._rate_at(self._updater.iterations), np.float32)
        return state

    def set_state(self, state):
        state = dict(state)
        rate = state.pop("learning_rate", None)
        self._updater.set_state(state)
        if rate is not None and self._schedule is None:
            self._set_learning_rate(np.asarray(rate)[()])

    # -- configuration ------------------------------------------------------------------------
    def get_config(self):
        if isinstance(self._schedule, LearningRateSchedule):
            rate = serialize_schedule(self._schedule)
        elif self._schedule is not None:
            rate = self._schedule
        else:
            rate = float(self._rate)
        config = {"name": self.name, "learning_rate": rate,
                  "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                  "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue,
                  "use_ema": self.use_ema, "ema_momentum": self.ema_momentum,
                  "ema_overwrite_frequency": self.ema_overwrite_frequency,
                  "loss_scale_factor": self.loss_scale_factor,
                  "gradient_accumulation_steps": self.gradient_accumulation_steps,
                  **self._hyper}
        if self.decay:
            config["decay"] = self.decay  # Keras 2's argument: only when it is in use
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = deserialize_schedule(config["learning_rate"],
                                                           custom_objects)
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, learning_rate={self.learning_rate}>"
