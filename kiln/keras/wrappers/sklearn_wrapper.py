"""Keras 3's scikit-learn wrappers (`keras.wrappers.SKLearnClassifier`, `SKLearnRegressor`,
`SKLearnTransformer`), as keras/src/wrappers/sklearn_wrapper.py: scikit-learn estimators whose
`model` is a compiled kiln model (cloned at each fit) or a callable `model(X, y, **model_kwargs)`
returning one; `fit_kwargs` go to `model.fit`.

Imported only when one of the classes is first used (kiln.keras.wrappers' `__getattr__`).
Without scikit-learn the classes still exist (on stand-in bases, as Keras) and creating one
raises an ImportError naming the package.
"""

import copy

import numpy as np

from ..models import Model, clone_model

try:
    import sklearn
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
except ImportError:
    sklearn = None

    class BaseEstimator:
        pass

    class ClassifierMixin:
        pass

    class RegressorMixin:
        pass

    class TransformerMixin:
        pass


def _require_sklearn(who):
    if sklearn is None:
        raise ImportError(f"{who} requires the scikit-learn package: install it with "
                          "`pip install scikit-learn`")


def _validate_data(estimator, *args, **kwargs):
    try:  # scikit-learn >= 1.6
        from sklearn.utils.validation import validate_data
    except ImportError:
        return estimator._validate_data(*args, **kwargs)
    return validate_data(estimator, *args, **kwargs)


def _type_of_target(y):
    from sklearn.utils.multiclass import type_of_target

    target_type = type_of_target(y)
    if target_type == "unknown":
        raise ValueError(f"Unknown label type for data: {y!r}")
    return target_type


class TargetReshaper(TransformerMixin, BaseEstimator):
    """A 1D target becomes a column for the model, and a column prediction 1D again."""

    def fit(self, y):
        self.ndim_ = y.ndim
        return self

    def transform(self, y):
        return y.reshape(-1, 1) if y.ndim == 1 else y

    def inverse_transform(self, y):
        if self.ndim_ == 1 and y.ndim == 2:
            return np.squeeze(y, axis=1)
        return y


class SKLBase(BaseEstimator):
    """Args: model (a compiled kiln Model, or a callable model(X, y, **model_kwargs) returning
    one), warm_start (unused, as Keras), model_kwargs (dict for the callable), fit_kwargs
    (dict for `model.fit`: epochs, batch_size, ...)."""

    def __init__(self, model, warm_start=False, model_kwargs=None, fit_kwargs=None):
        _require_sklearn(type(self).__name__)
        self.model = model
        self.warm_start = warm_start
        self.model_kwargs = model_kwargs
        self.fit_kwargs = fit_kwargs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    def __sklearn_clone__(self):
        """As Keras: the callable as is, a model deep-copied; fit_kwargs are not carried."""
        model = self.model if callable(self.model) else copy.deepcopy(self.model)
        return type(self)(model=model, warm_start=self.warm_start,
                          model_kwargs=self.model_kwargs)

    @property
    def epoch_(self):
        return getattr(self, "history_", {}).get("epoch", 0)

    def _get_model(self, X, y):
        if isinstance(self.model, Model):
            return clone_model(self.model)
        return self.model(X=X, y=y, **(self.model_kwargs or {}))

    def fit(self, X, y, **kwargs):
        """Validates X and y, builds (or clones) the model and trains it."""
        X, y = _validate_data(self, X, y)
        y = self._process_target(y, reset=True)
        model = self._get_model(X, y)
        if not getattr(model, "compiled", False) or not model.loss or not model.optimizer:
            raise RuntimeError(f"{type(self).__name__}: the given model needs to be compiled, "
                               "with a loss and an optimizer")
        fit_kwargs = {**(self.fit_kwargs or {}), **kwargs}  # Keras updates fit_kwargs in place
        self.history_ = model.fit(X, y, **fit_kwargs)
        self.model_ = model
        return self

    def predict(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = _validate_data(self, X, reset=False)
        return self._reverse_process_target(self.model_.predict(X))

    def _process_target(self, y, reset=False):
        _type_of_target(y)
        if reset:
            self._target_encoder = TargetReshaper().fit(y)
        return self._target_encoder.transform(y)

    def _reverse_process_target(self, y):
        return self._target_encoder.inverse_transform(y)


class SKLearnClassifier(ClassifierMixin, SKLBase):
    """The targets are one-hot encoded for the model (a softmax output over `classes_`) and the
    predictions decoded back to the labels."""

    def decision_function(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = _validate_data(self, X, reset=False)
        return self.model_.predict(X)

    def _process_target(self, y, reset=False):
        target_type = _type_of_target(y)
        if target_type not in ("binary", "multiclass"):
            raise ValueError("Only binary and multiclass target types are supported. "
                             f"Target type: {target_type}")
        if reset:
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import OneHotEncoder

            self._target_encoder = make_pipeline(
                TargetReshaper(), OneHotEncoder(sparse_output=False)).fit(y)
            self.classes_ = np.unique(y)
            if len(self.classes_) == 1:
                raise ValueError("Classifier can't train when only one class is present.")
        return self._target_encoder.transform(y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags


class SKLearnRegressor(RegressorMixin, SKLBase):
    """Predictions come back 1D for a 1D target."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class SKLearnTransformer(TransformerMixin, SKLBase):
    """`transform(X)` is the model's prediction."""

    def transform(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = _validate_data(self, X, reset=False)
        return self.model_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags


__all__ = ["SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer"]
