"""kiln.keras optimizers (arguments and Keras 2 update rules checked against numpy on a
one-layer softmax model), losses, metrics and to_categorical."""

import math

import numpy as np
import pytest

from kiln import keras
from kiln.keras import backend, losses, metrics
from kiln.keras.layers import Dense
from kiln.keras.optimizers import SGD, Adadelta, Adam, RMSprop
from kiln.keras.utils import to_categorical

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

OPTIMIZERS = [SGD, RMSprop, Adadelta, Adam]


# -- optimizer arguments ----------------------------------------------------------------------
@pytest.mark.parametrize("cls,default", [(SGD, 0.01), (RMSprop, 0.001), (Adadelta, 1.0),
                                         (Adam, 0.001)])
def test_keras2_default_learning_rates(cls, default):
    optimizer = cls()
    assert optimizer.learning_rate == optimizer.lr == pytest.approx(default)
    assert optimizer.decay == 0.0


@pytest.mark.parametrize("cls", OPTIMIZERS)
def test_lr_learning_rate_and_decay_are_accepted(cls):
    assert cls(lr=0.25).learning_rate == 0.25
    assert cls(learning_rate=0.125).lr == 0.125
    optimizer = cls(lr=0.5, decay=1e-4)
    assert optimizer.decay == 1e-4
    config = optimizer.get_config()
    assert config["name"] == cls.__name__
    assert config["learning_rate"] == 0.5 and config["decay"] == 1e-4


@pytest.mark.parametrize("cls", OPTIMIZERS)
def test_lr_and_learning_rate_together_are_refused(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}.*learning_rate.*lr"):
        cls(lr=0.1, learning_rate=0.1)


@pytest.mark.parametrize("cls,bad", [(SGD, "beta_1"), (RMSprop, "momentum"), (Adadelta, "beta_2"),
                                     (Adam, "rho"), (Adam, "amsgrad"), (SGD, "clipnorm")])
def test_unknown_keyword_arguments_are_refused(cls, bad):
    with pytest.raises(TypeError, match=rf"{cls.__name__}.*'{bad}'"):
        cls(**{bad: 0.5})


@pytest.mark.parametrize("kwargs", [dict(lr=-0.1), dict(learning_rate=-1), dict(decay=-0.5)])
def test_negative_rates_are_refused(kwargs):
    with pytest.raises(ValueError, match="learning_rate and decay must be >= 0"):
        SGD(**kwargs)


def test_hyperparameters_are_kept():
    assert SGD(momentum=0.9, nesterov=True).get_config()["momentum"] == 0.9
    assert SGD(momentum=0.9, nesterov=True).get_config()["nesterov"] is True
    assert RMSprop().get_config()["rho"] == 0.9
    assert Adadelta().get_config()["rho"] == 0.95
    config = Adam(beta_1=0.8).get_config()
    assert config["beta_1"] == 0.8 and config["beta_2"] == 0.999 and config["epsilon"] == 1e-7


def test_optimizer_get_by_name_and_iterations():
    assert isinstance(keras.optimizers.get("Adam"), Adam)
    instance = RMSprop()
    assert keras.optimizers.get(instance) is instance
    with pytest.raises(ValueError, match="argument optimizer.*'nadam'"):
        keras.optimizers.get("nadam")
    model = keras.Sequential([Dense(2, activation="softmax", input_shape=(3,))])
    optimizer = SGD(lr=0.1)
    model.compile(loss="categorical_crossentropy", optimizer=optimizer)
    assert optimizer.iterations == 0
    x = np.ones((10, 3), np.float32)
    model.fit(x, to_categorical(np.arange(10) % 2, 2), batch_size=4, epochs=2, verbose=0)
    assert optimizer.iterations == 6  # 3 batches (4 + 4 + 2) per epoch


# -- Keras 2 update rules vs numpy ------------------------------------------------------------
def numpy_gradients(x, y, kernel, bias):
    """d(mean categorical crossentropy of softmax(x @ kernel + bias)) / d(kernel, bias)."""
    logits = x @ kernel + bias
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    grad_logits = (e / e.sum(axis=1, keepdims=True) - y) / len(x)
    return [x.T @ grad_logits, grad_logits.sum(axis=0)]


class KerasReference:
    """Keras 2 optimizers (keras/optimizers.py, 2.2-2.3) in float64 numpy, with decay:
    lr_t = lr / (1 + decay * iterations), iterations counted before the update."""

    def __init__(self, name, lr, decay=0.0, **hyper):
        self.name, self.lr, self.decay, self.hyper = name, lr, decay, hyper
        self.iterations = 0
        self.state = None

    def apply(self, params, grads):
        if self.state is None:
            self.state = [[np.zeros_like(p) for p in params] for _ in range(2)]
        lr = self.lr / (1.0 + self.decay * self.iterations)
        h = self.hyper
        out = []
        for i, (p, g) in enumerate(zip(params, grads)):
            s0, s1 = self.state[0], self.state[1]
            if self.name == "sgd":
                momentum = h.get("momentum", 0.0)
                v = momentum * s0[i] - lr * g
                s0[i] = v
                p = p + momentum * v - lr * g if h.get("nesterov") else p + v
            elif self.name == "rmsprop":
                rho, eps = h.get("rho", 0.9), h.get("epsilon", 1e-7)
                s0[i] = rho * s0[i] + (1 - rho) * g * g
                p = p - lr * g / (np.sqrt(s0[i]) + eps)
            elif self.name == "adadelta":
                rho, eps = h.get("rho", 0.95), h.get("epsilon", 1e-7)
                s0[i] = rho * s0[i] + (1 - rho) * g * g
                update = g * np.sqrt(s1[i] + eps) / np.sqrt(s0[i] + eps)
                p = p - lr * update
                s1[i] = rho * s1[i] + (1 - rho) * update * update
            elif self.name == "adam":
                b1, b2 = h.get("beta_1", 0.9), h.get("beta_2", 0.999)
                eps = h.get("epsilon", 1e-7)
                t = self.iterations + 1
                lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                s0[i] = b1 * s0[i] + (1 - b1) * g
                s1[i] = b2 * s1[i] + (1 - b2) * g * g
                p = p - lr_t * s0[i] / (np.sqrt(s1[i]) + eps)
            out.append(p)
        self.iterations += 1
        return out


UPDATE_CASES = {
    "sgd": (lambda: SGD(lr=0.5), ("sgd", 0.5)),
    "sgd_decay": (lambda: SGD(learning_rate=0.5, decay=0.5), ("sgd", 0.5, 0.5)),
    "sgd_momentum": (lambda: SGD(lr=0.3, momentum=0.9), ("sgd", 0.3, 0.0, {"momentum": 0.9})),
    "sgd_nesterov": (lambda: SGD(lr=0.3, momentum=0.8, nesterov=True),
                     ("sgd", 0.3, 0.0, {"momentum": 0.8, "nesterov": True})),
    "rmsprop": (lambda: RMSprop(), ("rmsprop", 0.001)),
    "rmsprop_custom": (lambda: RMSprop(lr=0.01, rho=0.8, epsilon=1e-3, decay=0.2),
                       ("rmsprop", 0.01, 0.2, {"rho": 0.8, "epsilon": 1e-3})),
    "adadelta": (lambda: Adadelta(), ("adadelta", 1.0)),
    "adadelta_custom": (lambda: Adadelta(lr=0.5, rho=0.9, decay=0.1),
                        ("adadelta", 0.5, 0.1, {"rho": 0.9})),
    "adam": (lambda: Adam(), ("adam", 0.001)),
    "adam_custom": (lambda: Adam(learning_rate=0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-4,
                                 decay=0.3),
                    ("adam", 0.01, 0.3, {"beta_1": 0.8, "beta_2": 0.99, "epsilon": 1e-4})),
}


@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("case", sorted(UPDATE_CASES))
def test_update_matches_keras2_rule_on_numpy_gradient(case, steps):
    make, (name, lr, *rest) = UPDATE_CASES[case]
    decay = rest[0] if rest else 0.0
    hyper = rest[1] if len(rest) > 1 else {}
    rng = np.random.default_rng(3)
    n, features, classes = 12, 5, 3
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = to_categorical(rng.integers(0, classes, n), classes)
    kernel = rng.uniform(-0.5, 0.5, (features, classes)).astype(np.float32)
    bias = rng.uniform(-0.1, 0.1, classes).astype(np.float32)

    model = keras.Sequential([Dense(classes, activation="softmax", input_shape=(features,))])
    model.compile(loss="categorical_crossentropy", optimizer=make())
    model.set_weights([kernel, bias])
    model.fit(x, y, batch_size=n, epochs=steps, verbose=0, shuffle=False)

    reference = KerasReference(name, lr, decay, **hyper)
    params = [kernel.astype(np.float64), bias.astype(np.float64)]
    for _ in range(steps):
        params = reference.apply(params, numpy_gradients(x.astype(np.float64), y, *params))
    got = model.get_weights()
    for got_param, expected, start in zip(got, params, (kernel, bias)):
        moved = np.abs(expected - start).max()
        assert moved > 1e-4  # the step is large enough to be checked
        np.testing.assert_allclose(got_param, expected, rtol=0, atol=max(2e-6, 1e-4 * moved))


def test_training_gradient_is_softmax_minus_labels_over_n():
    """SGD with lr=1 moves the weights by exactly minus the gradient."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 4)).astype(np.float32)
    y = to_categorical([0, 1, 2, 0, 1, 2, 2], 3)
    model = keras.Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=1.0))
    start = model.get_weights()
    model.fit(x, y, batch_size=7, epochs=1, verbose=0)
    expected = numpy_gradients(x.astype(np.float64), y, *[w.astype(np.float64) for w in start])
    for before, after, grad in zip(start, model.get_weights(), expected):
        np.testing.assert_allclose(before - after, grad, atol=1e-6)


# -- losses and metrics -----------------------------------------------------------------------
def test_categorical_crossentropy_hand_computed_values():
    y = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1], [0.5, 0.5, 0]])
    p = np.array([[0.1, 0.8, 0.1], [0.25, 0.25, 0.5], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]])
    expected = [-math.log(0.8), -math.log(0.25), -math.log(0.5),
                -(0.5 * math.log(0.5) + 0.5 * math.log(0.25))]
    np.testing.assert_allclose(losses.categorical_crossentropy(y, p), expected, rtol=1e-12)
    assert losses.CategoricalCrossentropy()(y, p) == pytest.approx(np.mean(expected))


def test_categorical_crossentropy_normalizes_and_clips_like_keras():
    # Unnormalized predictions are divided by their sum first.
    assert losses.categorical_crossentropy([0, 1, 0], [1.0, 2.0, 1.0]) == pytest.approx(
        -math.log(0.5))
    # A zero probability on the true class is clipped to epsilon (1e-7): loss -log(1e-7).
    assert losses.categorical_crossentropy([0, 1, 0], [1.0, 0.0, 0.0]) == pytest.approx(
        -math.log(1e-7))
    assert -math.log(1e-7) == pytest.approx(16.1181, abs=1e-4)
    # A perfect prediction is clipped at 1 - epsilon.
    assert losses.categorical_crossentropy([1, 0], [1.0, 0.0]) == pytest.approx(
        -math.log(1 - 1e-7))
    backend.set_epsilon(1e-3)
    assert losses.categorical_crossentropy([0, 1], [1.0, 0.0]) == pytest.approx(-math.log(1e-3))


def test_categorical_crossentropy_is_per_sample():
    y = to_categorical([0, 1], 2)
    values = losses.categorical_crossentropy(y, [[0.9, 0.1], [0.4, 0.6]])
    assert values.shape == (2,)
    np.testing.assert_allclose(values, [-math.log(0.9), -math.log(0.6)])


def test_loss_lookup_and_from_logits():
    assert losses.get_name("categorical_crossentropy") == "categorical_crossentropy"
    assert losses.get_name(losses.categorical_crossentropy) == "categorical_crossentropy"
    assert losses.get_name(losses.CategoricalCrossentropy()) == "categorical_crossentropy"
    with pytest.raises(ValueError, match="argument loss.*'binary_crossentropy'"):
        losses.get_name("binary_crossentropy")
    with pytest.raises(ValueError, match="from_logits"):
        losses.CategoricalCrossentropy(from_logits=True)


def test_categorical_accuracy():
    y = to_categorical([0, 1, 2, 1], 3)
    p = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.2, 0.7, 0.1]])
    np.testing.assert_array_equal(metrics.categorical_accuracy(y, p), [1, 0, 1, 1])
    assert metrics.get_names(["accuracy", "acc", metrics.categorical_accuracy]) == [
        "accuracy", "acc", "categorical_accuracy"]


# -- to_categorical ---------------------------------------------------------------------------
def test_to_categorical_basics():
    np.testing.assert_array_equal(to_categorical([2, 0, 1]),
                                  [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    out = to_categorical(np.array([[3], [1]], np.uint8), 5)
    assert out.shape == (2, 5) and out.dtype == np.float32
    np.testing.assert_array_equal(out, [[0, 0, 0, 1, 0], [0, 1, 0, 0, 0]])
    np.testing.assert_array_equal(to_categorical(np.array([1.0, 0.0])), [[0, 1], [1, 0]])
    assert to_categorical([[0, 1], [1, 1]], 2).shape == (2, 2, 2)
    assert to_categorical([1], 2, dtype="int64").dtype == np.int64
    assert to_categorical([], 3).shape == (0, 3)
    labels = np.random.default_rng(0).integers(0, 10, 1000)
    assert np.array_equal(np.argmax(to_categorical(labels, 10), axis=1), labels)


@pytest.mark.parametrize("y,num_classes,pattern", [
    ([0, 1.5], None, "integer class labels"), ([0, -1], 3, r"\[0, 3\)"),
    ([0, 3], 3, r"\[0, 3\)"), ([0, 1], 0, "num_classes"), (["a", "b"], None, "integer"),
    ([], None, "num_classes")])
def test_to_categorical_errors(y, num_classes, pattern):
    with pytest.raises(ValueError, match=pattern):
        to_categorical(y, num_classes)
