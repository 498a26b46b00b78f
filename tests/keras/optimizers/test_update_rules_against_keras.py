"""Every optimizer's update rule against real Keras 3 (JAX): the same weights and five steps
of the same gradients, over an arena of three weights laid out as kiln packs them (padding
inside segments, gaps between them, a frozen weight after them).

Tolerance: both sides compute in float32 in different orders, so each step differs by a few
units in the last place of the step, and the weights round to a few units in the last place of
the weights; compared on the change from the start, relative 2e-4 plus 4 ulps of the largest
weight leaves a wide margin while a wrong rule (epsilon outside the square root, a missing
bias correction, clipping per weight instead of globally) moves results by 1e-2 or more.
"""

import numpy as np
import pytest
from optimizer_pair import SHAPES, run_keras, run_kiln, starting_point

ULP = float(np.finfo(np.float32).eps)
EXPONENTIAL = ("ExponentialDecay", {"initial_learning_rate": 0.05, "decay_steps": 2,
                                    "decay_rate": 0.5})
WARMUP_COSINE = ("CosineDecay", {"initial_learning_rate": 0.0, "decay_steps": 3,
                                 "warmup_target": 0.01, "warmup_steps": 2})
PIECEWISE = ("PiecewiseConstantDecay", {"boundaries": [1, 3], "values": [0.1, 0.05, 0.01]})

CASES = [
    ("SGD", {}),
    ("SGD", {"learning_rate": 0.05, "momentum": 0.9}),
    ("SGD", {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True, "clipnorm": 1.0}),
    ("SGD", {"learning_rate": 0.1, "weight_decay": 0.2, "clipvalue": 0.3}),
    ("SGD", {"learning_rate": PIECEWISE, "momentum": 0.5, "global_clipnorm": 2.0}),
    ("RMSprop", {}),
    ("RMSprop", {"centered": True, "rho": 0.8}),
    ("RMSprop", {"momentum": 0.9, "centered": True, "epsilon": 1e-4}),
    ("RMSprop", {"momentum": 0.5, "global_clipnorm": 1.0, "weight_decay": 0.1}),
    ("Adam", {}),
    ("Adam", {"learning_rate": 0.01, "amsgrad": True}),
    ("Adam", {"amsgrad": True, "clipnorm": 0.5, "weight_decay": 0.05, "beta_1": 0.8}),
    ("Adam", {"learning_rate": EXPONENTIAL, "global_clipnorm": 0.7}),
    ("AdamW", {}),
    ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.1, "amsgrad": True,
               "clipvalue": 0.5}),
    ("Nadam", {}),
    ("Nadam", {"learning_rate": 0.01, "beta_1": 0.8, "beta_2": 0.99, "clipnorm": 0.5}),
    ("Adamax", {}),
    ("Adamax", {"learning_rate": 0.01, "beta_2": 0.9, "weight_decay": 0.1,
                "global_clipnorm": 1.0}),
    ("Adagrad", {}),
    ("Adagrad", {"learning_rate": 0.05, "initial_accumulator_value": 0.5, "epsilon": 1e-3,
                 "clipnorm": 0.2}),
    ("Adadelta", {"learning_rate": 1.0}),
    ("Adadelta", {"learning_rate": 0.5, "rho": 0.9, "clipvalue": 0.5, "weight_decay": 0.01}),
    ("Lion", {}),
    ("Lion", {"learning_rate": WARMUP_COSINE, "beta_1": 0.95, "beta_2": 0.98,
              "weight_decay": 0.1}),
]


def case_id(case):
    name, arguments = case
    return name + "".join(f"-{key}" for key in arguments)


def assert_same_steps(kiln_history, keras_history, start, what):
    for name in SHAPES:  # the steps are big enough to be checked
        moved = np.abs(keras_history[-1][name].astype(np.float64) - start[name]).max()
        assert moved > 1e-4, f"{what}: {name} did not move"
    for step, (kiln_weights, keras_weights) in enumerate(
            zip(kiln_history, keras_history, strict=True)):
        for name in SHAPES:
            change = keras_weights[name].astype(np.float64) - start[name]
            np.testing.assert_allclose(
                kiln_weights[name] - start[name].astype(np.float64), change, rtol=2e-4,
                atol=2e-6 * np.abs(change).max() + 4 * ULP * np.abs(start[name]).max(),
                err_msg=f"{what}: weight {name} after step {step + 1}")


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_update_rule_matches_keras_over_five_steps(case):
    class_name, arguments = case
    weights, grads = starting_point(seed=CASES.index(case))
    kiln_history, arena, kiln_optimizer = run_kiln(class_name, arguments, weights, grads)
    keras_history, keras_optimizer = run_keras(class_name, arguments, weights, grads)
    assert_same_steps(kiln_history, keras_history, weights, case_id(case))
    # padding, gaps and the frozen weight behind the segments never move
    outside = arena.outside_weights()
    np.testing.assert_array_equal(outside[outside != 0], arena.frozen)
    assert int(kiln_optimizer.iterations) == int(keras_optimizer.iterations.numpy()) == 5
    np.testing.assert_allclose(float(kiln_optimizer.learning_rate),
                               float(np.asarray(keras_optimizer.learning_rate)), rtol=1e-6)


@pytest.mark.parametrize("case", [CASES[2], CASES[7], CASES[11], CASES[16], CASES[18],
                                  CASES[20], CASES[22], CASES[24]],
                         ids=lambda case: case_id(case))
def test_slots_have_keras_names_and_values(case):
    """get_state()'s slot arenas hold, at each weight's segment, Keras's optimizer variable
    named '<weight>_<slot>'."""
    class_name, arguments = case
    weights, grads = starting_point(seed=7)
    _, arena, kiln_optimizer = run_kiln(class_name, arguments, weights, grads)
    _, keras_optimizer = run_keras(class_name, arguments, weights, grads)
    state = kiln_optimizer.get_state()
    keras_slots = {v.name: np.asarray(v.numpy()) for v in keras_optimizer.variables}
    slot_names = sorted(set(state) - {"iterations", "learning_rate", "u_product"})
    assert slot_names, "no slot in the state"
    for slot in slot_names:
        for name, start, _ in arena.segments:
            expected = keras_slots[f"{name.replace('/', '_')}_{slot}"]
            got = state[slot][start:start + expected.size].reshape(expected.shape)
            np.testing.assert_allclose(got, expected, rtol=2e-4, atol=1e-6,
                                       err_msg=f"{case_id(case)}: slot {slot} of {name}")
    keras_slot_names = {name for name in keras_slots
                        if name not in ("iteration", "learning_rate") and "/" not in name
                        and any(name.startswith(w.replace("/", "_")) for w in SHAPES)}
    assert len(keras_slot_names) == len(slot_names) * len(SHAPES), sorted(keras_slots)


@pytest.mark.parametrize("class_name,arguments", [
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9}),
    ("RMSprop", {"learning_rate": 0.01}),
    ("Adam", {"learning_rate": 0.01, "clipnorm": 0.5})])
def test_keras2_decay_is_an_inverse_time_decay_per_step(class_name, arguments):
    """Keras 2's decay=d (lr / (1 + d * iterations)) equals Keras 3's
    InverseTimeDecay(lr, decay_steps=1, decay_rate=d)."""
    weights, grads = starting_point(seed=11)
    schedule = ("InverseTimeDecay", {"initial_learning_rate": arguments["learning_rate"],
                                     "decay_steps": 1, "decay_rate": 0.5})
    kiln_history, _, optimizer = run_kiln(class_name, {**arguments, "decay": 0.5}, weights,
                                          grads)
    keras_history, _ = run_keras(class_name, {**arguments, "learning_rate": schedule},
                                 weights, grads)
    assert_same_steps(kiln_history, keras_history, weights, f"{class_name} decay")
    assert float(optimizer.learning_rate) == pytest.approx(arguments["learning_rate"])


def test_global_clipnorm_of_an_infinite_gradient_makes_weights_nan_as_keras():
    weights, grads = starting_point(seed=3, steps=1)
    grads[0]["dense/bias"][0] = np.inf
    kiln_history, _, _ = run_kiln("SGD", {"global_clipnorm": 1.0}, weights, grads)
    keras_history, _ = run_keras("SGD", {"global_clipnorm": 1.0}, weights, grads)
    for name in SHAPES:
        assert np.isnan(keras_history[0][name]).all()
        assert np.isnan(kiln_history[0][name]).all()


def test_zero_gradient_is_not_scaled_by_clipnorm():
    """Keras's _clip_by_norm leaves an all-zero gradient at zero (no 0/0)."""
    weights, grads = starting_point(seed=4, steps=2)
    for step in grads:
        step["dense/bias"][...] = 0.0
    kiln_history, _, _ = run_kiln("SGD", {"clipnorm": 0.1, "learning_rate": 0.5}, weights,
                                  grads)
    np.testing.assert_array_equal(kiln_history[-1]["dense/bias"], weights["dense/bias"])
    assert np.isfinite(kiln_history[-1]["dense/kernel"]).all()


@pytest.mark.parametrize("exclude", [{"var_names": ["bias"]}, {"var_list": ["conv/kernel"]},
                                     {"var_names": ["bias"], "var_list": ["dense/kernel"]}],
                         ids=["names", "list", "both"])
def test_weights_excluded_from_weight_decay_as_keras(exclude):
    weights, grads = starting_point(seed=12)
    arguments = {"learning_rate": 0.05, "weight_decay": 0.5}
    kiln_history, _, optimizer = run_kiln("AdamW", arguments, weights, grads, exclude)
    keras_history, _ = run_keras("AdamW", arguments, weights, grads, exclude)
    assert_same_steps(kiln_history, keras_history, weights, f"AdamW excluding {exclude}")
    with pytest.raises(ValueError, match=r"only be configured before the optimizer is built"):
        optimizer.exclude_from_weight_decay(var_names=["kernel"])
