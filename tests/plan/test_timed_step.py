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


def test_one_entry_list_for_every_step():
    _, plan = model_and_plan()
    # the plain step runs the entries' callables, in the entries' order
    assert plan._runs == tuple(entry.run for entry in plan.entries)
    assert [entry.phase for entry in plan.entries[len(plan.calls):]] == ["update"] * 3
    assert [entry.owner for entry in plan.entries[len(plan.calls):]] == [
        "weight penalties", "optimizer", "constraints"]
    assert {entry.phase for entry in plan.entries[:len(plan.calls)]} == {
        "forward", "loss", "backward"}
    assert all(entry.call is call for entry, call in zip(plan.entries, plan.calls))
    # a data-parallel reducer joins the list before the penalties, and leaves it again
    reduced = []
    plan.gradient_reducer = lambda: reduced.append(len(reduced))
    assert step_labels(plan)[len(plan.calls)] == "gradient reduction"
    plan.train_step()
    assert reduced == [0] and len(timed_step(plan)) == len(plan.calls) + 4 and reduced == [0, 1]
    plan.gradient_reducer = None
    assert "gradient reduction" not in step_labels(plan)
