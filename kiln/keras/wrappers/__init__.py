"""scikit-learn wrappers (`keras.wrappers`): Keras 3's `SKLearnClassifier`, `SKLearnRegressor`
and `SKLearnTransformer` (sklearn_wrapper.py), and Keras 2's `keras.wrappers.scikit_learn`
(`KerasClassifier`, `KerasRegressor`).

scikit-learn is not a dependency of kiln: the Keras 3 classes are imported on first use (so
`import kiln.keras` never imports scikit-learn) and raise an ImportError naming the package when
it is absent. Keras 2's wrappers only need scikit-learn's duck typing, as in Keras 2.
"""

import importlib

from . import scikit_learn  # noqa: F401  (Keras 2 path; imports no scikit-learn)

_SKLEARN_CLASSES = ("SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer")

__all__ = list(_SKLEARN_CLASSES)


def __getattr__(name):
    if name in _SKLEARN_CLASSES:
        module = importlib.import_module(".sklearn_wrapper", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
