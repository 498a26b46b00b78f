"""The optimizers' Keras API: defaults and configs equal real Keras 3's, Keras configs load,
Keras 2 spellings work, bad arguments get errors naming the optimizer, the argument and what
was expected, and the learning rate is a readable, assignable variable."""

import inspect

import numpy as np
import pytest
from optimizer_pair import real_keras

from kiln import keras as kk
from kiln.keras import backend

NAMES = ["SGD", "RMSprop", "Adam", "AdamW", "Nadam", "Adamax", "Adagrad", "Adadelta", "Lion"]


def assert_same_config(ours, theirs, where="config"):
    """Equal dicts, floats to float32 precision (Keras keeps the rate in a float32)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), where
        for key in theirs:
            assert_same_config(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-7), where
    else:
        assert ours == theirs, where


def without_name(config):
    return {key: value for key, value in config.items() if key != "name"}


@pytest.mark.parametrize("name", NAMES)
def test_defaults_and_config_keys_equal_keras(name):
    ours = without_name(getattr(kk.optimizers, name)().get_config())
    theirs = without_name(getattr(real_keras().optimizers, name)().get_config())
    assert list(ours) == list(theirs)  # same keys, same order
    if name == "Adadelta":  # Keras 2's default, which the mnist_cnn example relies on
        assert ours.pop("learning_rate") == 1.0 and theirs.pop("learning_rate") == \
            pytest.approx(0.001)
    assert ours == pytest.approx(theirs)


@pytest.mark.parametrize("name", NAMES)
def test_signature_is_keras_argument_order(name):
    """Positional arguments bind as in Keras 3 (e.g. SGD(0.1, 0.9) is momentum 0.9)."""
    ours = inspect.signature(getattr(kk.optimizers, name)).parameters
    theirs = inspect.signature(getattr(real_keras().optimizers, name)).parameters
    assert list(ours) == list(theirs)
    for key in theirs:
        if key not in ("kwargs", "learning_rate") or name != "Adadelta":
            assert ours[key].default == theirs[key].default, key


def test_automatic_names_follow_keras():
    backend.clear_session()
    names = [kk.optimizers.SGD().name, kk.optimizers.SGD().name, kk.optimizers.RMSprop().name]
    assert names == ["sgd", "sgd_1", "rm_sprop"]


@pytest.mark.parametrize("name,arguments", [
    ("SGD", {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True, "clipnorm": 1.5}),
    ("RMSprop", {"rho": 0.8, "momentum": 0.5, "centered": True, "global_clipnorm": 2.0}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.01, "clipvalue": 0.5}),
    ("AdamW", {"weight_decay": 0.1, "beta_1": 0.8}),
    ("Adagrad", {"initial_accumulator_value": 0.3, "epsilon": 1e-5}),
    ("Lion", {"beta_2": 0.95}),
    ("Adam", {"learning_rate": ("CosineDecay", {"initial_learning_rate": 0.0, "decay_steps": 10,
                                                "warmup_target": 0.1, "warmup_steps": 3})}),
])
def test_keras_serialized_optimizers_load_with_the_same_config(name, arguments):
    from optimizer_pair import build
    keras_optimizer = build(real_keras(), name, {**arguments, "name": "opt"})
    serialized = real_keras().optimizers.serialize(keras_optimizer)
    ours = kk.optimizers.deserialize(serialized)
    assert type(ours).__name__ == name
    assert_same_config(ours.get_config(), keras_optimizer.get_config())
    assert kk.optimizers.serialize(ours)["class_name"] == serialized["class_name"]
    again = type(ours).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()


def test_get_by_name_dict_or_instance():
    assert isinstance(kk.optimizers.get("Adam"), kk.optimizers.Adam)
    assert isinstance(kk.optimizers.get("nadam"), kk.optimizers.Nadam)
    assert isinstance(kk.optimizers.get("RMSprop"), kk.optimizers.RMSprop)
    instance = kk.optimizers.Lion()
    assert kk.optimizers.get(instance) is instance
    keras2 = kk.optimizers.get({"class_name": "RMSprop",
                                "config": {"lr": 1e-4, "decay": 1e-6, "rho": 0.9}})
    assert float(keras2.lr) == pytest.approx(1e-4) and keras2.decay == 1e-6
    with pytest.raises(ValueError, match=r"argument optimizer must be one of .*'adam'.*"
                                         r"got 'adamm'"):
        kk.optimizers.get("adamm")


def test_keras2_spellings():
    assert kk.optimizers.rmsprop is kk.optimizers.RMSprop
    assert {kk.optimizers.sgd, kk.optimizers.adam, kk.optimizers.adagrad, kk.optimizers.adamax,
            kk.optimizers.adadelta, kk.optimizers.nadam} == {
        kk.optimizers.SGD, kk.optimizers.Adam, kk.optimizers.Adagrad, kk.optimizers.Adamax,
        kk.optimizers.Adadelta, kk.optimizers.Nadam}
    optimizer = kk.optimizers.rmsprop(lr=0.0001, decay=1e-6)  # the cifar10_cnn example
    assert float(optimizer.lr) == pytest.approx(1e-4) and optimizer.decay == 1e-6
    config = optimizer.get_config()
    assert config["decay"] == 1e-6 and "decay" not in kk.optimizers.RMSprop().get_config()
    assert kk.optimizers.SGD(0.1, 0.9).get_config()["momentum"] == 0.9  # positional
    assert kk.optimizers.RMSprop(epsilon=None).epsilon == 1e-7  # Keras 2: None = K.epsilon()
    with pytest.raises(ValueError, match=r"Adam: give either learning_rate or lr"):
        kk.optimizers.Adam(lr=0.1, learning_rate=0.1)


@pytest.mark.parametrize("call,error,pattern", [
    (lambda: kk.optimizers.SGD(learning_rate=-0.1), ValueError,
     r"SGD: argument learning_rate must be a float >= 0, .*got -0.1"),
    (lambda: kk.optimizers.Adam(lr=-1), ValueError,
     r"Adam: argument learning_rate must be a float >= 0"),
    (lambda: kk.optimizers.SGD(decay=-0.5), ValueError,
     r"SGD: argument decay must be a finite number >= 0, got -0.5"),
    (lambda: kk.optimizers.Adam(clipnorm=-1.0), ValueError, r"Adam: argument clipnorm"),
    (lambda: kk.optimizers.Adam(betta_1=0.9), kk.optimizers.UnknownArgumentError,
     r"Adam: unexpected keyword argument\(s\) 'betta_1'; expected learning_rate, beta_1, "),
    (lambda: kk.optimizers.SGD(rho=0.9), TypeError, r"SGD: unexpected .*'rho'.*momentum"),
    (lambda: kk.optimizers.RMSprop(amsgrad=True), ValueError, r"RMSprop: .*'amsgrad'"),
    (lambda: kk.optimizers.SGD(clipnorm=1.0, clipvalue=1.0), ValueError,
     r"SGD: only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
     r"Received: clipnorm=1.0, clipvalue=1.0"),
    (lambda: kk.optimizers.AdamW(weight_decay=None), ValueError,
     r"AdamW: argument weight_decay must be a float"),
    (lambda: kk.optimizers.SGD(momentum=1.5), ValueError,
     r"SGD: argument momentum must be a float between \[0, 1\], got 1.5"),
    (lambda: kk.optimizers.Lion(beta_1=0.0), ValueError, r"Lion: argument beta_1 .*\(0, 1\]"),
    (lambda: kk.optimizers.Adam(use_ema=True), NotImplementedError,
     r"Adam: argument use_ema is not supported"),
    (lambda: kk.optimizers.Adam(0.1, 0.9, 0.9, 1e-7, False, None, None, None, None, False,
                                0.99, None, None, None, "n", 1), TypeError,
     r"Adam: takes at most 15 positional arguments"),
])
def test_bad_arguments_name_the_optimizer_and_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_learning_rate_is_a_variable_for_keras2_and_keras3_code():
    optimizer = kk.optimizers.SGD(learning_rate=0.01)
    kept = optimizer.learning_rate  # one object, as a Keras variable, that stays current
    assert kept is optimizer.lr and optimizer.iterations is optimizer.iterations
    assert float(optimizer.lr) == pytest.approx(0.01)
    value = backend.get_value(optimizer.lr)
    assert isinstance(value, np.ndarray) and value.dtype == np.float32 and value.shape == ()
    backend.set_value(optimizer.lr, 0.5)  # Keras 2 scripts and callbacks
    assert float(backend.get_value(optimizer.learning_rate)) == 0.5
    optimizer.learning_rate = 0.25  # Keras 3
    assert optimizer.lr == 0.25 and optimizer.learning_rate.numpy() == np.float32(0.25)
    optimizer.learning_rate.assign(0.125)
    assert float(optimizer.lr) == 0.125
    optimizer.lr = optimizer.lr * 2  # arithmetic gives numbers
    assert optimizer.learning_rate == 0.25 and optimizer.lr < 0.3 and 0.2 <= optimizer.lr
    assert np.asarray(optimizer.lr) == np.float32(0.25) and f"{optimizer.lr:.2f}" == "0.25"
    assert "learning_rate" in repr(optimizer.lr) and optimizer.learning_rate.path.endswith(
        "/learning_rate")
    assert optimizer.get_config()["learning_rate"] == 0.25 and float(kept) == 0.25
    with pytest.raises(ValueError, match=r"SGD: argument learning_rate must be a float >= 0"):
        optimizer.learning_rate = -1.0
    with pytest.raises(TypeError, match=r"set_value: argument x must be a variable"):
        backend.set_value(0.5, 0.1)


def test_a_scheduled_learning_rate_follows_the_iterations_and_is_not_settable():
    schedule = kk.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    optimizer = kk.optimizers.Adam(learning_rate=schedule)
    assert float(optimizer.learning_rate) == pytest.approx(0.1)
    optimizer.iterations.assign(4)
    assert int(optimizer.iterations) == 4 and optimizer.iterations == 4
    assert float(optimizer.learning_rate) == pytest.approx(0.025)
    with pytest.raises(TypeError, match=r"created with a `LearningRateSchedule`"):
        optimizer.learning_rate = 0.1
    with pytest.raises(TypeError, match=r"not settable"):
        backend.set_value(optimizer.lr, 0.1)
    optimizer.learning_rate = kk.optimizers.schedules.InverseTimeDecay(1.0, 1, 1.0)
    assert float(optimizer.learning_rate) == pytest.approx(1.0 / 5)
    float_then_schedule = kk.optimizers.SGD(0.1)
    float_then_schedule.learning_rate = schedule  # Keras allows replacing a float by one
    assert float(float_then_schedule.learning_rate) == pytest.approx(0.1)


def test_state_has_iterations_learning_rate_and_restores_them():
    optimizer = kk.optimizers.SGD(0.1, momentum=0.9)
    optimizer.iterations.assign(3)
    state = optimizer.get_state()
    assert set(state) == {"iterations", "learning_rate"}  # no slot before the first step
    fresh = kk.optimizers.SGD(0.5, momentum=0.9)
    fresh.set_state(state)
    assert int(fresh.iterations) == 3 and float(fresh.lr) == pytest.approx(0.1)
