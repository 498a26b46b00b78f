"""Keras 3's keras.wrappers.SKLearnClassifier / SKLearnRegressor / SKLearnTransformer on kiln
models: the same constructor as Keras's, the same predictions as Keras's wrapper after the same
training from the same weights, scikit-learn's cloning and cross_val_score; without
scikit-learn, an ImportError naming it."""

import inspect

import numpy as np
import pytest
from keras_oracle import real_keras

from kiln import keras as kk
from kiln.keras.wrappers import sklearn_wrapper

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def data(seed=0, n=24):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    labels = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 0.5)  # 3 classes
    return x, np.array(["cat", "dog", "emu"])[labels], (x @ [1.0, -2.0, 0.5, 0.0]).astype(
        np.float32)


def model_builder(K, units, activation, loss):
    def build(X, y, learning_rate=0.1):
        inputs = K.Input((X.shape[1],))
        outputs = K.layers.Dense(units if units else y.shape[1], activation=activation,
                                 kernel_initializer="zeros")(inputs)
        model = K.Model(inputs, outputs)
        model.compile(optimizer=K.optimizers.SGD(learning_rate=learning_rate), loss=loss)
        return model
    return build


FIT = {"epochs": 3, "batch_size": 24, "shuffle": False, "verbose": 0}


def test_constructors_match_keras():
    keras = real_keras()
    for name in ("SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer"):
        assert (inspect.signature(getattr(kk.wrappers, name).__init__)
                == inspect.signature(getattr(keras.wrappers, name).__init__)), name


def test_classifier_and_regressor_predict_like_keras():
    pytest.importorskip("sklearn")
    keras = real_keras()
    x, labels, target = data()
    results = {}
    for name, K in (("kiln", kk), ("keras", keras)):
        classifier = K.wrappers.SKLearnClassifier(
            model=model_builder(K, None, "softmax", "categorical_crossentropy"),
            model_kwargs={"learning_rate": 0.5}, fit_kwargs=FIT).fit(x, labels)
        regressor = K.wrappers.SKLearnRegressor(
            model=model_builder(K, 1, None, "mse"), fit_kwargs=FIT).fit(x, target)
        results[name] = (classifier.decision_function(x), classifier.predict(x),
                         regressor.predict(x), list(classifier.classes_))
    (k_scores, k_labels, k_values, k_classes), (scores, labels_, values, classes) = (
        results["kiln"], results["keras"])
    np.testing.assert_allclose(k_scores, scores, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(k_labels, labels_)
    assert k_values.shape == values.shape == (24,)
    np.testing.assert_allclose(k_values, values, rtol=1e-4, atol=1e-5)
    assert k_classes == classes == ["cat", "dog", "emu"]


def test_cross_val_score_and_clone():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.model_selection import cross_val_score

    x, labels, target = data(n=30)
    classifier = kk.wrappers.SKLearnClassifier(
        model=model_builder(kk, None, "softmax", "categorical_crossentropy"),
        model_kwargs={"learning_rate": 0.5}, fit_kwargs=FIT)
    scores = cross_val_score(classifier, x, labels, cv=3)
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))
    assert scores.mean() > 0.4  # better than a constant guess of the commonest of 3 labels
    regressor = kk.wrappers.SKLearnRegressor(model=model_builder(kk, 1, None, "mse"),
                                             fit_kwargs=FIT)
    r2 = cross_val_score(regressor, x, target, cv=3)
    assert r2.shape == (3,) and np.all(np.isfinite(r2))
    clone = sklearn.base.clone(classifier)
    assert clone.model is classifier.model and clone.model_kwargs == {"learning_rate": 0.5}


def test_an_uncompiled_model_and_a_regression_target_are_refused():
    pytest.importorskip("sklearn")
    x, labels, target = data()

    def uncompiled(X, y):
        inputs = kk.Input((4,))
        return kk.Model(inputs, kk.layers.Dense(1)(inputs))

    with pytest.raises(RuntimeError, match="needs to be compiled"):
        kk.wrappers.SKLearnRegressor(model=uncompiled).fit(x, target)
    classifier = kk.wrappers.SKLearnClassifier(model=model_builder(kk, None, "softmax", "mse"))
    with pytest.raises(ValueError, match="Only binary and multiclass"):
        classifier.fit(x, target)


def test_without_scikit_learn_the_error_names_it(monkeypatch):
    monkeypatch.setattr(sklearn_wrapper, "sklearn", None)
    for name in ("SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer"):
        with pytest.raises(ImportError, match=f"{name} requires the scikit-learn package"):
            getattr(kk.wrappers, name)(model=None)
