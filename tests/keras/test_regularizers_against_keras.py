"""Weight and activity regularizers and weight constraints, against real Keras 3: the same
penalties in the reported loss, the same gradients (same weights after training steps) and the
same projections after each update, in both data formats."""

import numpy as np
import pytest
from keras_oracle import check_against_keras, real_keras

from kiln import keras as kk


def regularized_cnn(data_format):
    axis = -1 if data_format == "channels_last" else 1
    shape = (6, 6, 3) if data_format == "channels_last" else (3, 6, 6)

    def build(K):
        R, C = K.regularizers, K.constraints
        inputs = K.Input(shape)
        x = K.layers.Conv2D(4, 3, padding="same", data_format=data_format,
                            kernel_regularizer=R.l2(0.05), bias_regularizer=R.l1(0.02),
                            # l1's gradient at exactly 0 is backend-defined (see
                            # kiln.keras.regularizers): start the l1-penalized bias off zero
                            bias_initializer="ones",
                            kernel_constraint=C.MaxNorm(0.8, axis=[0, 1, 2]))(inputs)
        x = K.layers.BatchNormalization(axis=axis, gamma_regularizer=R.L2(0.1),
                                        beta_constraint=C.NonNeg())(x)
        x = K.layers.Activation("relu")(x)
        x = K.layers.Conv2D(5, 3, data_format=data_format, activation="tanh",
                            activity_regularizer=R.L1L2(l1=0.01, l2=0.02),
                            kernel_constraint=C.UnitNorm(axis=[0, 1, 2]))(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        x = K.layers.Dense(6, activation="relu", kernel_regularizer=R.L1L2(0.003, 0.01),
                           kernel_constraint=C.MinMaxNorm(0.2, 0.9, rate=0.5),
                           bias_constraint=C.NonNeg())(x)
        outputs = K.layers.Dense(3, activation="softmax", activity_regularizer=R.l2(0.1),
                                 kernel_constraint=C.max_norm(1.5))(x)
        return K.Model(inputs, outputs)
    return build


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_penalties_and_constraints_train_as_in_keras(data_format):
    # the reported loss includes every penalty; training_forward compares against a bare
    # crossentropy, so it is off here
    check_against_keras(regularized_cnn(data_format), optimizers=("sgd", "adam"), steps=3,
                        training_forward=False)


def test_evaluate_reports_the_penalties_as_keras():
    keras = real_keras()
    build = regularized_cnn("channels_last")
    kk.backend.clear_session()
    kk.initializers.set_random_seed(0)
    ours = build(kk)
    keras.backend.clear_session()
    theirs = build(keras)
    theirs.set_weights(ours.get_weights())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 6, 6, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    for model in (ours, theirs):
        model.compile(optimizer="sgd", loss="categorical_crossentropy")
    ours_loss = ours.evaluate(x, y, batch_size=8, verbose=0)
    theirs_loss = theirs.evaluate(x, y, batch_size=8, verbose=0)
    assert ours_loss == pytest.approx(float(theirs_loss), rel=1e-4)
    bare = float(np.mean(-np.sum(y * np.log(ours.predict(x, verbose=0)), axis=-1)))
    assert ours_loss > bare + 0.01  # the penalties are really in it


@pytest.mark.parametrize("make", [
    lambda K: K.regularizers.L1(0.3), lambda K: K.regularizers.L2(0.2),
    lambda K: K.regularizers.L1L2(0.1, 0.4), lambda K: K.regularizers.l1_l2()])
def test_regularizer_values_and_configs_match_keras(make):
    keras = real_keras()
    w = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
    ours, theirs = make(kk), make(keras)
    assert float(ours(w)) == pytest.approx(float(theirs(w)), rel=1e-6)
    assert ours.get_config() == pytest.approx(theirs.get_config())
    assert kk.regularizers.get(kk.regularizers.serialize(ours)).get_config() == \
        ours.get_config()


@pytest.mark.parametrize("make", [
    lambda K: K.constraints.MaxNorm(0.5, axis=0), lambda K: K.constraints.UnitNorm(axis=1),
    lambda K: K.constraints.MinMaxNorm(0.3, 0.6, rate=0.7, axis=[0, 1]),
    lambda K: K.constraints.NonNeg()])
def test_constraint_projections_match_keras(make):
    keras = real_keras()
    w = np.random.default_rng(3).normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(make(kk)(w), np.asarray(make(keras)(w)), rtol=1e-5, atol=1e-7)


def test_a_penalty_kiln_cannot_plan_is_refused_naming_layer_and_argument():
    with pytest.raises(ValueError, match=r"Dense 'd'.*kernel_regularizer"):
        kk.layers.Dense(3, name="d", kernel_regularizer=lambda w: 0.1 * np.sum(w))
    with pytest.raises(ValueError, match=r"Conv2D 'c'.*activity_regularizer"):
        kk.layers.Conv2D(3, 3, name="c", activity_regularizer="l3")
    with pytest.raises(ValueError, match=r"Dense 'e'.*bias_constraint"):
        kk.layers.Dense(3, name="e", bias_constraint=lambda w: w)
    with pytest.raises(ValueError, match="l2 must be a finite float >= 0"):
        kk.regularizers.L2(-1.0)
