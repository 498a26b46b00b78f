"""Learning-rate schedules against real Keras 3: values over a range of steps (including
boundaries, the end of a decay, restarts), configs and serialization."""

import numpy as np
import pytest
from optimizer_pair import real_keras

from kiln import keras as kk

CASES = [
    ("ExponentialDecay", {"initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.8}),
    ("ExponentialDecay", {"initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.5,
                          "staircase": True}),
    ("InverseTimeDecay", {"initial_learning_rate": 0.5, "decay_steps": 5, "decay_rate": 0.3}),
    ("InverseTimeDecay", {"initial_learning_rate": 0.5, "decay_steps": 5, "decay_rate": 0.3,
                          "staircase": True}),
    ("PiecewiseConstantDecay", {"boundaries": [10, 25, 40], "values": [1.0, 0.5, 0.1, 0.01]}),
    ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 30}),
    ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 13,
                         "end_learning_rate": 0.01, "power": 2.0, "cycle": True}),
    ("CosineDecay", {"initial_learning_rate": 0.1, "decay_steps": 40, "alpha": 0.1}),
    ("CosineDecay", {"initial_learning_rate": 0.0, "decay_steps": 30, "warmup_target": 0.2,
                     "warmup_steps": 10}),
    ("CosineDecayRestarts", {"initial_learning_rate": 0.1, "first_decay_steps": 8}),
    ("CosineDecayRestarts", {"initial_learning_rate": 0.1, "first_decay_steps": 5,
                             "t_mul": 1.0, "m_mul": 0.5, "alpha": 0.05}),
    ("CosineDecayRestarts", {"initial_learning_rate": 1.0, "first_decay_steps": 3,
                             "t_mul": 1.5, "m_mul": 0.8}),
]


def case_id(case):
    return case[0] + "".join(f"-{key}" for key in case[1] if key not in (
        "initial_learning_rate", "decay_steps", "first_decay_steps", "boundaries", "values"))


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_values_config_and_serialization_equal_keras(case):
    name, arguments = case
    ours = getattr(kk.optimizers.schedules, name)(**arguments)
    theirs = getattr(real_keras().optimizers.schedules, name)(**arguments)
    steps = range(0, 81)
    if "warmup_target" in arguments:  # its ops.cond takes one step at a time (slow: eager)
        expected = np.array([float(np.asarray(theirs(step))) for step in steps])
    else:
        expected = np.asarray(theirs(np.arange(81, dtype=np.float32)), np.float64)
    got = np.array([float(ours(step)) for step in steps])
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-8)
    assert len(set(np.round(expected, 6))) > 2  # the range covers a real change
    assert ours.get_config() == theirs.get_config()
    assert kk.optimizers.schedules.serialize(ours) == \
        real_keras().optimizers.schedules.serialize(theirs)
    again = kk.optimizers.schedules.deserialize(kk.optimizers.schedules.serialize(ours))
    assert type(again) is type(ours) and again.get_config() == ours.get_config()
    assert type(ours).from_config(ours.get_config()).get_config() == ours.get_config()


@pytest.mark.parametrize("call,pattern", [
    (lambda s: s.ExponentialDecay(0.1, 0, 0.5), r"ExponentialDecay: argument decay_steps "
                                                 r"must be > 0, got 0"),
    (lambda s: s.CosineDecay(0.1, -1), r"CosineDecay: argument decay_steps must be > 0"),
    (lambda s: s.CosineDecayRestarts(0.1, 0), r"first_decay_steps must be > 0"),
    (lambda s: s.PiecewiseConstantDecay([1, 2], [0.1]), r"boundaries should be 1 less"),
    (lambda s: s.deserialize({"class_name": "Nope", "config": {}}),
     r"unknown learning rate schedule 'Nope'"),
])
def test_bad_schedule_arguments(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(kk.optimizers.schedules)


def test_a_custom_schedule_subclass_drives_an_optimizer():
    class Halving(kk.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return 1.0 / 2 ** step

        def get_config(self):
            return {}

    optimizer = kk.optimizers.SGD(Halving())
    w, g = np.zeros(3, np.float32), np.ones(3, np.float32)
    for _ in range(3):
        optimizer.make_updater().apply(w, g)
    np.testing.assert_allclose(w, -(1 + 0.5 + 0.25))
    assert float(optimizer.learning_rate) == 0.125
