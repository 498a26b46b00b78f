"""The mixed_bfloat16 policy: bf16 activations and conv/dense inputs, f32 weights and updates."""

import warnings

import numpy as np
import pytest
from model_helpers import CL, quadrant_data, small_cnn

from kiln import keras
from kiln.binding import constants as dnnl
from kiln.keras import mixed_precision
from kiln.keras.optimizers import SGD

pytestmark = pytest.mark.usefixtures("kiln_keras_env")
native = pytest.mark.skipif(not mixed_precision.native_bf16(),
                            reason="this CPU has no native bf16 (avx512_bf16 or AMX)")


@pytest.fixture
def bf16_policy():
    mixed_precision.set_global_policy("mixed_bfloat16")
    yield
    mixed_precision.set_global_policy("float32")


def test_policy_names_and_errors():
    assert mixed_precision.Policy("mixed_bfloat16").compute_dtype == "bfloat16"
    assert mixed_precision.Policy("mixed_bfloat16").variable_dtype == "float32"
    assert mixed_precision.Policy("float32").compute_dtype == "float32"
    with pytest.raises(ValueError, match="argument name must be one of"):
        mixed_precision.Policy("mixed_float16")


def test_without_native_bf16_the_policy_stays_float32_with_one_warning(monkeypatch):
    monkeypatch.setattr(mixed_precision, "native_bf16", lambda: False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mixed_precision.set_global_policy("mixed_bfloat16")
    assert mixed_precision.global_policy().name == "float32"
    assert len(caught) == 1 and "no native bf16" in str(caught[0].message)


def compiled(seed_weights=None, dropout=0.0):
    model = small_cnn(CL, dropout=dropout, seed=3)
    model.compile(loss="categorical_crossentropy", optimizer=SGD(learning_rate=0.1),
                  metrics=["accuracy"])
    if seed_weights is not None:
        model.set_weights(seed_weights)
    return model


@native
def test_bf16_plan_computes_in_bf16_and_keeps_f32_weights(bf16_policy):
    model = compiled()
    x, y = quadrant_data(32)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    plan = model._plans[(True, 32)]
    conv = next(c for c in plan.calls if c.label.endswith("forward") and "conv2d" in c.label)
    assert conv.args[dnnl.ARG_SRC].desc.data_type == dnnl.bf16
    assert conv.args[dnnl.ARG_DST].desc.data_type == dnnl.bf16
    assert all(w.dtype == np.float32 for w in model.get_weights())
    assert plan.parameters.values_arena.dtype == np.float32


@native
def test_bf16_step_matches_f32_step_to_bf16_precision():
    x, y = quadrant_data(32, seed=5)
    reference = compiled()
    weights = reference.get_weights()
    reference.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        mixed = compiled(weights)
        np.testing.assert_allclose(mixed.predict(x), reference_predictions(weights, x),
                                   atol=2e-2)
        mixed.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    finally:
        mixed_precision.set_global_policy("float32")
    for before, f32, bf16 in zip(weights, reference.get_weights(), mixed.get_weights()):
        update_f32, update_bf16 = f32 - before, bf16 - before
        assert np.abs(update_f32).max() > 0
        # bf16 keeps 8 bits of mantissa: the update agrees to a few percent of its size
        np.testing.assert_allclose(update_bf16, update_f32,
                                   atol=0.05 * np.abs(update_f32).max())


def reference_predictions(weights, x):
    model = compiled(weights)
    return model.predict(x)


@native
def test_bf16_training_learns(bf16_policy):
    x, y = quadrant_data(512, seed=1)
    x_test, y_test = quadrant_data(256, seed=2)
    model = compiled(dropout=0.25)
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    assert model.evaluate(x_test, y_test, verbose=0)[1] >= 0.9


@native
def test_bf16_dropout_keeps_about_one_minus_rate_scaled(bf16_policy):
    model = keras.Sequential([keras.layers.Conv2D(16, 1, use_bias=False, kernel_initializer="ones",
                                                  input_shape=(32, 32, 1)),
                              keras.layers.Dropout(0.25, seed=7), keras.layers.Flatten(),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(learning_rate=0.0))
    x = np.ones((8, 32, 32, 1), np.float32)
    model.fit(x, np.eye(2, dtype=np.float32)[[0, 1] * 4], batch_size=8, verbose=0)
    plan = model._plans[(True, 8)]
    dropout_out = next(c for c in plan.calls if c.label == f"{model.layers[1].name} forward")
    # the step's buffers are shared by liveness, so a later call may overwrite the dropout's
    # output: run the calls again up to the dropout and read it there
    for call in plan.calls[:plan.calls.index(dropout_out) + 1]:
        call.run()
    values = dropout_out.args[dnnl.ARG_DST].as_array(np.uint16).astype(np.uint32) << 16
    values = values.view(np.float32)
    kept = values[values != 0]
    assert abs(kept.size / values.size - 0.75) < 0.01
    # 1 / 0.75 truncated to bf16 (8 mantissa bits) is 1.328125
    np.testing.assert_allclose(kept, 1.328125)
