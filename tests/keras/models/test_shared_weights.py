"""Layers and sub-models shared by several models keep training, against real Keras 3.

kiln keeps a model's weights in that model's ParameterStore, and a shared weight goes to the
store of the model that runs; these tests alternate the models the way real code does and
compare every weight with Keras 3 (JAX backend) from the same initial weights after each
round: a GAN (generator, discriminator, combined model with the discriminator frozen), a
shared trunk with two heads trained in turn by fit, and a feature extractor used on its own
between fits.

Keras 3 reads `trainable` each time a train function runs (not at compile time, as Keras 2
did): the combined model's optimizer is built with the weights trainable at its first step,
and a discriminator frozen before its own first train_on_batch trains nothing. The GAN test
runs each order of freezing and compiling, and kiln must do what Keras 3 does in each.
Tolerances are keras_oracle's (rtol 1e-4, atol 1e-5).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
import keras_oracle  # noqa: E402  (sets KERAS_BACKEND before Keras is imported)

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

ROUNDS = 3


def build_both(build):
    """`build(K)` -> {name: model} on kiln and on Keras 3; the Keras models get kiln's
    initial weights (through every model, so each shared weight gets the same value)."""
    keras = keras_oracle.real_keras()
    kk.backend.clear_session(free_memory=False)
    kk.initializers.set_random_seed(0)
    kiln_models = build(kk)
    keras.backend.clear_session(free_memory=False)
    keras_models = build(keras)
    for name, model in kiln_models.items():
        keras_models[name].set_weights(model.get_weights())
    return kiln_models, keras_models


def assert_same_weights(kiln_models, keras_models, when):
    for name, model in kiln_models.items():
        keras_weights = keras_models[name].weights
        assert len(model.weights) == len(keras_weights), f"{when}: {name}.weights"
        for weight, keras_weight in zip(model.weights, keras_weights, strict=True):
            np.testing.assert_allclose(
                weight.numpy(), np.asarray(keras_weight), rtol=keras_oracle.RTOL,
                atol=keras_oracle.ATOL, err_msg=f"{when}: {name} weight {weight.path}")


def moved(before, after):
    return max(float(np.abs(a - b).max()) for a, b in zip(before, after, strict=True))


# -- the repro: a sub-model's predict between fits of the model that holds it ---------
def submodel_in_a_model(K):
    base = K.Sequential([K.Input((6,)), K.layers.Dense(8)], name="base")
    inputs = K.Input((6,))
    full = K.Model(inputs, K.layers.Dense(1)(base(inputs)), name="full")
    full.compile(K.optimizers.SGD(0.1), "mse")
    return {"base": base, "full": full}


def test_submodel_keeps_training_when_predicted_between_fits():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    kiln_models, keras_models = build_both(submodel_in_a_model)
    for step in range(4):
        before = kiln_models["base"].get_weights()
        for models in (kiln_models, keras_models):
            models["full"].fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        assert moved(before, kiln_models["base"].get_weights()) > 1e-3, (
            f"fit {step + 1}: the shared sub-model 'base' was not updated")
        assert_same_weights(kiln_models, keras_models, f"after fit {step + 1}")
        np.testing.assert_allclose(
            kiln_models["base"].predict(x, verbose=0), keras_models["base"].predict(x, verbose=0),
            rtol=keras_oracle.RTOL, atol=keras_oracle.ATOL, err_msg=f"predict {step + 1}")


# -- a GAN: discriminator, generator, combined model with the discriminator frozen -------------
FREEZING = [
    # Keras 3's way: the discriminator is trainable for its own step, frozen for the combined
    "toggled_around_each_step",
    # Keras 2's recipe: frozen before the combined model is compiled, never unfrozen; Keras 3
    # then trains nothing in discriminator.train_on_batch (it reads trainable when it runs)
    "frozen_before_combined_compile",
    "frozen_after_combined_compile",
    # frozen only while the combined model is compiled: Keras 3 trains it in both models
    "frozen_for_combined_compile_only",
]


def gan(freezing):
    def build(K):
        layers = K.layers
        generator = K.Sequential([K.Input((3,)), layers.Dense(5, activation="relu"),
                                  layers.Dense(4, activation="tanh")], name="generator")
        discriminator = K.Sequential([K.Input((4,)), layers.Dense(5, activation="relu"),
                                      layers.Dense(1, activation="sigmoid")],
                                     name="discriminator")
        discriminator.compile(K.optimizers.Adam(0.01), "binary_crossentropy")
        if freezing in ("frozen_before_combined_compile", "frozen_for_combined_compile_only"):
            discriminator.trainable = False
        noise = K.Input((3,))
        combined = K.Model(noise, discriminator(generator(noise)), name="combined")
        combined.compile(K.optimizers.Adam(0.01), "binary_crossentropy")
        if freezing == "frozen_after_combined_compile":
            discriminator.trainable = False
        if freezing == "frozen_for_combined_compile_only":
            discriminator.trainable = True
        return {"generator": generator, "discriminator": discriminator, "combined": combined}

    return build


def gan_round(models, real, noise, toggle):
    """One round of the classic loop: the generator makes fakes (predict), the discriminator
    trains on real and fake, the combined model trains the generator to fool it."""
    batch = len(real)
    fake = models["generator"].predict(noise, verbose=0)
    labels = np.concatenate([np.ones((batch, 1)), np.zeros((batch, 1))]).astype(np.float32)
    if toggle:
        models["discriminator"].trainable = True
    discriminator_loss = models["discriminator"].train_on_batch(
        np.concatenate([real, fake]), labels)
    if toggle:
        models["discriminator"].trainable = False
    combined_loss = models["combined"].train_on_batch(noise, np.ones((batch, 1), np.float32))
    return float(discriminator_loss), float(combined_loss)


@pytest.mark.parametrize("freezing", FREEZING)
def test_gan_alternating_train_on_batch_equals_keras(freezing):
    kiln_models, keras_models = build_both(gan(freezing))
    toggle = freezing == "toggled_around_each_step"
    rng = np.random.default_rng(0)
    start = kiln_models["generator"].get_weights()
    for round_ in range(1, ROUNDS + 1):
        real = rng.standard_normal((8, 4)).astype(np.float32)
        noise = rng.standard_normal((8, 3)).astype(np.float32)
        kiln_losses = gan_round(kiln_models, real, noise, toggle)
        keras_losses = gan_round(keras_models, real, noise, toggle)
        np.testing.assert_allclose(kiln_losses, keras_losses, rtol=keras_oracle.RTOL,
                                   atol=keras_oracle.ATOL, err_msg=f"losses of round {round_}")
        assert_same_weights(kiln_models, keras_models, f"{freezing}, round {round_}")
    # Adam moves every weight about its learning rate per step: the generator trained each round
    assert moved(start, kiln_models["generator"].get_weights()) > 0.02


# -- a shared trunk with two heads, each model trained in turn by fit --------------------------
def two_heads(K):
    layers = K.layers
    trunk = K.Sequential([K.Input((6,)), layers.Dense(8, activation="tanh")], name="trunk")
    inputs = K.Input((6,))
    features = trunk(inputs)
    regression = K.Model(inputs, layers.Dense(1, name="value")(features), name="regression")
    classification = K.Model(inputs, layers.Dense(3, activation="softmax", name="label")(
        features), name="classification")
    regression.compile(K.optimizers.Adam(0.01), "mse")
    classification.compile(K.optimizers.SGD(0.1, momentum=0.9), "categorical_crossentropy")
    return {"trunk": trunk, "regression": regression, "classification": classification}


def test_shared_trunk_with_two_heads_trained_in_turn_equals_keras():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    value = rng.standard_normal((16, 1)).astype(np.float32)
    label = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 16)]
    kiln_models, keras_models = build_both(two_heads)
    for round_ in range(1, ROUNDS + 1):
        for models in (kiln_models, keras_models):
            models["regression"].fit(x, value, batch_size=8, epochs=1, shuffle=False, verbose=0)
            models["classification"].fit(x, label, batch_size=8, epochs=1, shuffle=False,
                                         verbose=0)
        # both optimizers keep their own slots (Adam's moments, SGD's momentum) of the trunk
        assert_same_weights(kiln_models, keras_models, f"round {round_}")


# -- a feature extractor (the same layers, a model of its own) used between fits ---------------
def extractor_of_a_model(K):
    layers = K.layers
    inputs = K.Input((6,))
    hidden = layers.Dense(8, activation="relu", name="hidden")(inputs)
    full = K.Model(inputs, layers.Dense(2, name="out")(hidden), name="full")
    full.compile(K.optimizers.Adam(0.01), "mse")
    return {"full": full, "extractor": K.Model(inputs, hidden, name="extractor")}


def test_feature_extractor_predicted_between_fits_equals_keras():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.standard_normal((16, 2)).astype(np.float32)
    kiln_models, keras_models = build_both(extractor_of_a_model)
    for round_ in range(1, ROUNDS + 1):
        features = []
        for models in (kiln_models, keras_models):
            models["full"].fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
            features.append(models["extractor"].predict(x, verbose=0))
        np.testing.assert_allclose(*features, rtol=keras_oracle.RTOL, atol=keras_oracle.ATOL,
                                   err_msg=f"extracted features, round {round_}")
        assert_same_weights(kiln_models, keras_models, f"round {round_}")


def test_alternating_models_keeps_their_plans():
    """A switch copies the shared weights into the store of the model that runs; each model
    keeps its plans (planning again at every switch cost several steps per round)."""
    models = gan("toggled_around_each_step")(kk)
    rng = np.random.default_rng(3)
    real = rng.standard_normal((8, 4)).astype(np.float32)
    noise = rng.standard_normal((8, 3)).astype(np.float32)
    gan_round(models, real, noise, toggle=True)
    plans = {name: dict(model._plans) for name, model in models.items()}
    for _ in range(2):
        gan_round(models, real, noise, toggle=True)
    for name, model in models.items():
        assert model._plans.keys() == plans[name].keys(), name
        assert all(model._plans[key] is plan for key, plan in plans[name].items()), name


def test_combined_model_saves_its_optimizer_after_a_sub_model_ran_alone(tmp_path):
    """The combined model's optimizer slots are laid out by its own store, which keeps its
    copy of the generator's weights while the generator predicts on its own (the store
    lost them before: saving failed with KeyError)."""
    models = gan("toggled_around_each_step")(kk)
    rng = np.random.default_rng(4)
    real = rng.standard_normal((8, 4)).astype(np.float32)
    noise = rng.standard_normal((8, 3)).astype(np.float32)
    gan_round(models, real, noise, toggle=True)
    models["generator"].predict(noise, verbose=0)
    models["combined"].save(tmp_path / "combined.keras")
    loaded = kk.models.load_model(tmp_path / "combined.keras")
    for weight, value in zip(models["combined"].weights, loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(value, weight.numpy(), err_msg=weight.path)
    state, loaded_state = models["combined"].optimizer.get_state(), loaded.optimizer.get_state()
    assert state.keys() == loaded_state.keys()
    for name, value in state.items():
        np.testing.assert_array_equal(loaded_state[name], value, err_msg=name)
