"""Keras 2's keras.wrappers.scikit_learn.KerasClassifier / KerasRegressor, as Keras 2
documents them: build_fn and sk_params (each call gets the ones it takes, unknown ones are
refused), get_params / set_params, fit / predict / predict_proba / score with labels of any
kind; scikit-learn's clone and cross_val_score when scikit-learn is installed."""

import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.wrappers.scikit_learn import KerasClassifier, KerasRegressor

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def build_classifier(hidden=8, output_units=3, loss="categorical_crossentropy"):
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(hidden, activation="relu"),
                           kk.layers.Dense(output_units, activation="softmax"
                                           if output_units > 1 else "sigmoid")])
    model.compile(optimizer=kk.optimizers.Adam(0.05), loss=loss, metrics=["accuracy"])
    return model


def build_regressor(hidden=8):
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(hidden, activation="relu"),
                           kk.layers.Dense(1)])
    model.compile(optimizer=kk.optimizers.Adam(0.05), loss="mse")
    return model


def data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5)
    return x, np.array([10, 20, 30])[labels], (x @ [1.0, -1.0, 0.5, 0.0]).astype(np.float32)


def test_classifier_fit_predict_proba_score_with_any_labels():
    x, labels, _ = data()
    classifier = KerasClassifier(build_fn=build_classifier, hidden=16, epochs=20,
                                 batch_size=20, verbose=0)
    history = classifier.fit(x, labels)
    assert len(history.history["loss"]) == 20  # epochs reached fit, hidden reached build_fn
    assert classifier.model.layers[0].units == 16
    np.testing.assert_array_equal(classifier.classes_, [10, 20, 30])
    predicted = classifier.predict(x)
    assert predicted.shape == (60,) and set(predicted) <= {10, 20, 30}
    proba = classifier.predict_proba(x)
    assert proba.shape == (60, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-5)
    np.testing.assert_array_equal(predicted, classifier.classes_[proba.argmax(axis=1)])
    accuracy = classifier.score(x, labels)
    assert accuracy == pytest.approx(np.mean(predicted == labels), abs=1e-6)
    assert accuracy > 0.8


def test_binary_sigmoid_probabilities_get_two_columns():
    x, labels, _ = data()
    binary = np.where(labels > 10, "yes", "no")
    classifier = KerasClassifier(build_classifier, output_units=1, loss="binary_crossentropy",
                                 epochs=5, verbose=0)
    classifier.fit(x, binary)
    proba = classifier.predict_proba(x)
    assert proba.shape == (60, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-6)
    np.testing.assert_array_equal(classifier.predict(x),
                                  np.where(proba[:, 1] > 0.5, "yes", "no"))


def test_regressor_predicts_1d_and_scores_minus_the_loss():
    x, _, target = data()
    regressor = KerasRegressor(build_fn=build_regressor, epochs=5, verbose=0)
    regressor.fit(x, target)
    predicted = regressor.predict(x)
    assert predicted.shape == (60,)
    mse = float(np.mean((predicted - target) ** 2))
    assert regressor.score(x, target) == pytest.approx(-mse, rel=1e-4)


def test_params_and_errors():
    classifier = KerasClassifier(build_fn=build_classifier, epochs=2)
    assert classifier.get_params() == {"epochs": 2, "build_fn": build_classifier}
    assert classifier.set_params(hidden=4, batch_size=8) is classifier
    assert classifier.get_params(deep=False)["hidden"] == 4
    with pytest.raises(ValueError, match="KerasClassifier: epoch is not a legal parameter"):
        KerasClassifier(build_fn=build_classifier, epoch=2)
    with pytest.raises(ValueError, match="nope is not a legal parameter"):
        classifier.set_params(nope=1)
    x, labels, _ = data()
    without_accuracy = KerasClassifier(build_fn=build_regressor, epochs=1, verbose=0)
    without_accuracy.fit(x, labels == 10)
    with pytest.raises(ValueError, match="not configured to compute accuracy"):
        without_accuracy.score(x, labels == 10)


def test_cross_val_score():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.model_selection import cross_val_score

    x, labels, target = data(n=45)
    classifier = KerasClassifier(build_fn=build_classifier, epochs=10, batch_size=15,
                                 verbose=0)
    accuracies = cross_val_score(classifier, x, labels, cv=2)
    assert accuracies.shape == (2,) and accuracies.mean() > 0.6
    negative_mse = cross_val_score(KerasRegressor(build_fn=build_regressor, epochs=5,
                                                  verbose=0), x, target, cv=2)
    assert negative_mse.shape == (2,) and np.all(negative_mse <= 0)
    clone = sklearn.base.clone(classifier)
    assert clone.get_params() == classifier.get_params() and clone is not classifier
