"""Losses on a sequence output (batch, steps, classes) against real Keras 3 (JAX backend),
cross-entropies and the element-wise losses:
the mean over every step, and with the output's mask (Embedding(mask_zero=True) passed on by
Dense) the sum over the real steps divided by their count, per-step sample weights, and the
masked accuracy evaluate reports. Losses and weights after two epochs must agree."""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import RTOL, assert_weights_close, build_pair  # noqa: E402

PADDED = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [1, 1, 1, 1, 1], [2, 0, 0, 0, 0],
                   [9, 8, 7, 6, 0], [3, 0, 0, 0, 0]], dtype=np.int32)
CLASS_IDS = np.random.default_rng(3).integers(0, 3, PADDED.shape)
STEP_WEIGHTS = np.random.default_rng(4).uniform(0.2, 2.0, PADDED.shape).astype(np.float32)


def tagger(mask_zero):
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=mask_zero)(inputs)
        x = K.layers.Dense(6, activation="relu")(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    return build


def labels_for(loss):
    return CLASS_IDS if loss.startswith("sparse") else np.eye(3, dtype=np.float32)[CLASS_IDS]


@pytest.fixture(autouse=True)
def quiet_jax():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        yield


@pytest.mark.parametrize("mask_zero", [False, True])
@pytest.mark.parametrize("loss", ["categorical_crossentropy", "sparse_categorical_crossentropy"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sequence_loss_trains_as_keras(mask_zero, loss, weighted):
    kiln_model, keras_model, _ = build_pair(tagger(mask_zero), inputs=PADDED)
    y = labels_for(loss)
    weights = STEP_WEIGHTS if weighted else None
    for model in (kiln_model, keras_model):
        model.compile(optimizer="adam", loss=loss)
    for epoch in range(2):
        kiln_loss = kiln_model.fit(PADDED, y, sample_weight=weights, batch_size=6,
                                   shuffle=False, verbose=0).history["loss"][0]
        keras_loss = keras_model.fit(PADDED, y, sample_weight=weights, batch_size=6,
                                     shuffle=False, verbose=0).history["loss"][0]
        assert kiln_loss == pytest.approx(keras_loss, rel=RTOL), f"epoch {epoch + 1}"
        assert_weights_close(kiln_model, keras_model, f"after epoch {epoch + 1}")


def test_the_mask_changes_the_loss_as_in_keras():
    losses = {}
    for mask_zero in (False, True):
        kiln_model, keras_model, _ = build_pair(tagger(mask_zero), inputs=PADDED)
        for model in (kiln_model, keras_model):
            model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        losses[mask_zero] = kiln_model.evaluate(PADDED, CLASS_IDS, verbose=0)
        assert losses[mask_zero] == pytest.approx(
            keras_model.evaluate(PADDED, CLASS_IDS, verbose=0), rel=RTOL)
    # predictions near uniform: masking moves the mean loss only a little
    assert losses[True] != pytest.approx(losses[False], rel=1e-4)


def test_evaluate_reports_the_masked_accuracy_as_keras():
    kiln_model, keras_model, _ = build_pair(tagger(True), inputs=PADDED)
    results = []
    for model in (kiln_model, keras_model):
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"], weighted_metrics=["accuracy"])
        logs = model.evaluate(PADDED, CLASS_IDS, sample_weight=STEP_WEIGHTS, verbose=0,
                              return_dict=True)
        results.append(logs)
    kiln_logs, keras_logs = results
    for name in ("loss", "accuracy", "weighted_accuracy"):
        assert kiln_logs[name] == pytest.approx(keras_logs[name], rel=RTOL), name


def test_sample_weights_of_a_sequence_output_are_per_step():
    kiln_model, _, _ = build_pair(tagger(True), inputs=PADDED)
    kiln_model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"one weight per step of a sequence output, shape "
                                         r"\(6, 5\), got \(6,\)"):
        kiln_model.fit(PADDED, CLASS_IDS, sample_weight=np.ones(6, np.float32), verbose=0)


@pytest.mark.parametrize("mask_zero", [False, True])
@pytest.mark.parametrize("loss, activation", [("mse", None), ("binary_crossentropy", "sigmoid"),
                                              ("mae", "tanh")])
def test_element_wise_losses_on_a_sequence_as_keras(mask_zero, loss, activation):
    def build(K):
        inputs = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=mask_zero)(inputs)
        return K.Model(inputs, K.layers.Dense(3, activation=activation)(x))

    kiln_model, keras_model, _ = build_pair(build, inputs=PADDED)
    y = np.random.default_rng(5).uniform(0, 1, (6, 5, 3)).astype(np.float32)
    for model in (kiln_model, keras_model):
        model.compile(optimizer="adam", loss=loss, metrics=["mae"])
    kiln_logs = kiln_model.evaluate(PADDED, y, verbose=0, return_dict=True)
    keras_logs = keras_model.evaluate(PADDED, y, verbose=0, return_dict=True)
    for name in ("loss", "mae"):
        assert kiln_logs[name] == pytest.approx(keras_logs[name], rel=RTOL), name
    for epoch in range(2):
        kiln_loss = kiln_model.fit(PADDED, y, shuffle=False, verbose=0).history["loss"][0]
        keras_loss = keras_model.fit(PADDED, y, shuffle=False, verbose=0).history["loss"][0]
        assert kiln_loss == pytest.approx(keras_loss, rel=RTOL), f"epoch {epoch + 1}"
        assert_weights_close(kiln_model, keras_model, f"after epoch {epoch + 1}")
