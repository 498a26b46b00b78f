"""A timed step runs what train_step runs, in its order: the calls, then the update phase
(weight penalties, optimizer, constraints); StepPlan.profile reports every entry."""

import numpy as np

from kiln import keras
from kiln.plan.timed_step import step_labels, timed_step


def model_and_plan():
    model = keras.Sequential([
        keras.layers.Dense(3, input_shape=(4,), kernel_regularizer=keras.regularizers.l2(0.1),
                           kernel_constraint=keras.constraints.MaxNorm(0.1)),
    ])
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    plan = model._plan(True, 2)
    plan.inputs[...] = np.arange(8, dtype=np.float32).reshape(2, 4)
    plan.labels[...] = 1.0
    return model, plan


def test_timed_step_trains_as_train_step():
    model, plan = model_and_plan()
    twin, twin_plan = model_and_plan()
    twin.set_weights(model.get_weights())
    labels = step_labels(plan)
    assert labels[len(plan.calls):] == ["weight penalties", "optimizer update", "constraints"]
    for _ in range(2):
        times = timed_step(plan)
        stats = plan._total_loss().copy()
        expected = twin_plan.train_step().copy()
        assert len(times) == len(labels) and all(end >= start for start, end in times)
        np.testing.assert_allclose(stats, expected, rtol=1e-6)
    for ours, theirs in zip(model.get_weights(), twin.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_plan_profile_reports_every_entry():
    _, plan = model_and_plan()
    profile = plan.profile(steps=2)
    assert set(profile) == set(step_labels(plan)) | {"outside calls"}
    assert all(seconds >= 0 for seconds in profile.values())
