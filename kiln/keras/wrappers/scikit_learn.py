"""Keras 2's scikit-learn wrappers (`keras.wrappers.scikit_learn.KerasClassifier` /
`KerasRegressor`), as Keras 2.2-2.3 documented and implemented them.

`build_fn` returns a compiled model (a function, an object with `__call__`, or None to use the
subclass's own `__call__`); `sk_params` mixes its arguments with those of `fit`, `predict`,
`predict_classes` / `predict_proba` and `evaluate`, and each call gets only the ones it takes.
`get_params` / `set_params` make the wrapper clonable, so scikit-learn's `cross_val_score`,
`GridSearchCV` and pipelines use it; scikit-learn itself is not imported here.
"""

import copy
import inspect
import types

import numpy as np

from ..models import Sequential
from ..utils import to_categorical


def _takes(function, name):
    """Whether `function` accepts the keyword `name` (or any keyword)."""
    parameters = inspect.signature(function).parameters
    return name in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())


def _loss_name(model):
    loss = model.loss
    return getattr(loss, "__name__", loss)


class BaseWrapper:
    """Args: build_fn (callable returning a compiled model, or None to use `self.__call__`),
    **sk_params (arguments of build_fn and of the model's fit / predict / evaluate)."""

    _estimator_type = None  # "classifier" / "regressor": scikit-learn's cross-validation reads it

    def __init__(self, build_fn=None, **sk_params):
        self.build_fn = build_fn
        self.sk_params = sk_params
        self.check_params(sk_params)

    def check_params(self, params):
        """Refuses a parameter no call would take: a misspelt `epoch=` would be ignored."""
        legal = [Sequential.fit, Sequential.predict, Sequential.predict_classes,
                 Sequential.evaluate]
        if self.build_fn is None:
            legal.append(self.__call__)
        elif not isinstance(self.build_fn, (types.FunctionType, types.MethodType)):
            legal.append(self.build_fn.__call__)
        else:
            legal.append(self.build_fn)
        for name in params:
            if not any(name in inspect.signature(fn).parameters for fn in legal):
                raise ValueError(f"{type(self).__name__}: {name} is not a legal parameter "
                                 "(of build_fn, fit, predict, predict_classes or evaluate)")

    def get_params(self, **params):
        """The wrapper's parameters, `build_fn` included (scikit-learn's `deep` is ignored)."""
        res = copy.deepcopy(self.sk_params)
        res.update({"build_fn": self.build_fn})
        return res

    def set_params(self, **params):
        self.check_params(params)
        self.sk_params.update(params)
        return self

    def __sklearn_tags__(self):
        """What scikit-learn >= 1.6 asks every estimator for (Keras 2 predates it); imported
        only when scikit-learn itself calls this."""
        from sklearn.utils import ClassifierTags, InputTags, RegressorTags, Tags, TargetTags

        kind = self._estimator_type
        return Tags(estimator_type=kind, target_tags=TargetTags(required=True),
                    input_tags=InputTags(), non_deterministic=True,
                    classifier_tags=ClassifierTags() if kind == "classifier" else None,
                    regressor_tags=RegressorTags() if kind == "regressor" else None)

    def fit(self, x, y, **kwargs):
        """Builds a new model with build_fn and trains it; returns its History."""
        if self.build_fn is None:
            self.model = self.__call__(**self.filter_sk_params(self.__call__))
        elif not isinstance(self.build_fn, (types.FunctionType, types.MethodType)):
            self.model = self.build_fn(**self.filter_sk_params(self.build_fn.__call__))
        else:
            self.model = self.build_fn(**self.filter_sk_params(self.build_fn))
        y = np.asarray(y)
        if _loss_name(self.model) == "categorical_crossentropy" and y.ndim != 2:
            y = to_categorical(y)
        fit_args = copy.deepcopy(self.filter_sk_params(Sequential.fit))
        fit_args.update(kwargs)
        return self.model.fit(x, y, **fit_args)

    def filter_sk_params(self, fn, override=None):
        """The sk_params `fn` takes, updated with `override`."""
        res = {name: value for name, value in self.sk_params.items()
               if name in inspect.signature(fn).parameters}
        res.update(override or {})
        return res


class KerasClassifier(BaseWrapper):
    """scikit-learn classifier around a Keras model: labels of any sortable kind (`classes_`),
    integer or one-hot targets."""

    _estimator_type = "classifier"

    def fit(self, x, y, sample_weight=None, **kwargs):
        y = np.array(y)
        if y.ndim == 2 and y.shape[1] > 1:
            self.classes_ = np.arange(y.shape[1])
        elif (y.ndim == 2 and y.shape[1] == 1) or y.ndim == 1:
            self.classes_ = np.unique(y)
            y = np.searchsorted(self.classes_, y)
        else:
            raise ValueError(f"{type(self).__name__}: invalid shape for y: {y.shape}")
        self.n_classes_ = len(self.classes_)
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        return super().fit(x, y, **kwargs)

    def predict(self, x, **kwargs):
        """The predicted labels (from `classes_`)."""
        kwargs = self.filter_sk_params(Sequential.predict_classes, kwargs)
        proba = self.model.predict(x, **kwargs)  # Sequential.predict_classes' rule, any model
        classes = proba.argmax(axis=-1) if proba.shape[-1] > 1 else (proba > 0.5).astype(int)
        return self.classes_[np.asarray(classes).reshape(-1)]

    def predict_proba(self, x, **kwargs):
        """Class probabilities (N, n_classes); a single sigmoid output p becomes [1 - p, p]."""
        kwargs = self.filter_sk_params(Sequential.predict_proba, kwargs)
        probs = self.model.predict(x, **kwargs)
        if probs.shape[1] == 1:
            probs = np.hstack([1 - probs, probs])
        return probs

    def score(self, x, y, **kwargs):
        """The model's accuracy on (x, y); the model must be compiled with
        metrics=["accuracy"]."""
        y = np.searchsorted(self.classes_, y)
        kwargs = self.filter_sk_params(Sequential.evaluate, kwargs)
        if _loss_name(self.model) == "categorical_crossentropy" and np.ndim(y) != 2:
            y = to_categorical(y, num_classes=len(self.classes_))
        outputs = self.model.evaluate(x, y, **kwargs)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        for name, output in zip(self.model.metrics_names, outputs, strict=False):
            if name in ("accuracy", "acc"):
                return output
        raise ValueError(f"{type(self).__name__}.score: the model is not configured to "
                         "compute accuracy; pass metrics=['accuracy'] to model.compile()")


class KerasRegressor(BaseWrapper):
    """scikit-learn regressor around a Keras model; `score` is minus the loss."""

    _estimator_type = "regressor"

    def predict(self, x, **kwargs):
        kwargs = self.filter_sk_params(Sequential.predict, kwargs)
        return np.squeeze(self.model.predict(x, **kwargs))

    def score(self, x, y, **kwargs):
        kwargs = self.filter_sk_params(Sequential.evaluate, kwargs)
        loss = self.model.evaluate(x, y, **kwargs)
        return -loss[0] if isinstance(loss, list) else -loss


__all__ = ["BaseWrapper", "KerasClassifier", "KerasRegressor"]
