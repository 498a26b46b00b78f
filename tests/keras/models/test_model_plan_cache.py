"""Model's plan cache: a plan dropped from it (KILN_PLAN_CACHE_SIZE) or freed by
keras.backend.clear_session() is built again on next use with nothing lost (weights, optimizer
state, moving statistics), and a deleted model is collected with its plans."""

import gc
import weakref

import numpy as np

from kiln import keras
from kiln.binding.primitive import primitive_cache
from kiln.keras import layers


def model_with_state(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((8, 8, 3)), layers.Conv2D(6, 3),
                              layers.BatchNormalization(), layers.Activation("relu"),
                              layers.Flatten(), layers.Dense(3)])
    model.compile(loss="mse", optimizer=keras.optimizers.Adam(0.01), metrics=["mae"])
    return model


def data(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((20, 8, 8, 3)).astype(np.float32),
            rng.standard_normal((20, 3)).astype(np.float32))


def train_and_predict(model, x, y):
    """Epochs of 8 + 8 + 4 samples between predictions of other sizes: with one plan kept,
    every call rebuilds the plan it needs."""
    outputs = []
    for epoch in range(3):
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        outputs.append(model.predict(x[:5 + epoch], verbose=0))
        outputs.append(model.evaluate(x, y, batch_size=6, verbose=0))
    return outputs


def test_dropped_plans_are_rebuilt_with_nothing_lost(monkeypatch):
    x, y = data()
    kept = train_and_predict(model_with_state(), x, y)
    monkeypatch.setenv("KILN_PLAN_CACHE_SIZE", "1")
    model = model_with_state()
    dropped = train_and_predict(model, x, y)
    assert len(model._plans) == 1
    for got, expected in zip(dropped, kept, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_clear_session_frees_plans_and_primitives_of_live_models():
    x, y = data()
    model = model_with_state()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    before = model.predict(x, verbose=0)
    plans = [weakref.ref(plan) for plan in model._plans.values()]
    assert plans and len(primitive_cache) > 0
    keras.backend.clear_session()
    assert len(model._plans) == 0 and len(primitive_cache) == 0
    assert all(plan() is None for plan in plans)
    np.testing.assert_allclose(model.predict(x, verbose=0), before, rtol=1e-6, atol=1e-6)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # the optimizer state is kept


def test_deleted_model_is_collected_with_its_plans():
    x, y = data()
    model = model_with_state()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, validation_split=0.2)
    model.predict(x, verbose=0)
    alive = weakref.ref(model)
    plans = [weakref.ref(plan) for plan in model._plans.values()]
    del model
    gc.collect()
    assert alive() is None and all(plan() is None for plan in plans)
