"""kiln.runtime.optimizers against numpy transcriptions of Keras 2's update rules."""

import math

import numpy as np
import pytest

from kiln.runtime.optimizers import AdadeltaUpdater, AdamUpdater, RMSpropUpdater, SGDUpdater

# 40000 > BLOCK (16384) and not a multiple of it: exercises several prange blocks and a tail.
SIZE = 40000
STEPS = 3


class KerasSGD:
    def __init__(self, lr, momentum=0.0, nesterov=False, decay=0.0):
        self.lr, self.momentum, self.nesterov, self.decay = lr, momentum, nesterov, decay

    def run(self, p, grads):
        moments = np.zeros_like(p)
        for iterations, g in enumerate(grads):
            lr = self.lr * (1.0 / (1.0 + self.decay * iterations))
            v = self.momentum * moments - lr * g
            moments = v
            p = p + self.momentum * v - lr * g if self.nesterov else p + v
        return p


class KerasRMSprop:
    def __init__(self, lr, rho=0.9, epsilon=1e-7, decay=0.0):
        self.lr, self.rho, self.epsilon, self.decay = lr, rho, epsilon, decay

    def run(self, p, grads):
        a = np.zeros_like(p)
        for iterations, g in enumerate(grads):
            lr = self.lr * (1.0 / (1.0 + self.decay * iterations))
            a = self.rho * a + (1.0 - self.rho) * np.square(g)
            p = p - lr * g / (np.sqrt(a) + self.epsilon)
        return p


class KerasAdadelta:
    def __init__(self, lr=1.0, rho=0.95, epsilon=1e-7, decay=0.0):
        self.lr, self.rho, self.epsilon, self.decay = lr, rho, epsilon, decay

    def run(self, p, grads):
        a, d_a = np.zeros_like(p), np.zeros_like(p)
        for iterations, g in enumerate(grads):
            lr = self.lr * (1.0 / (1.0 + self.decay * iterations))
            a = self.rho * a + (1.0 - self.rho) * np.square(g)
            update = g * np.sqrt(d_a + self.epsilon) / np.sqrt(a + self.epsilon)
            p = p - lr * update
            d_a = self.rho * d_a + (1.0 - self.rho) * np.square(update)
        return p


class KerasAdam:
    def __init__(self, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, decay=0.0):
        self.lr, self.beta_1, self.beta_2 = lr, beta_1, beta_2
        self.epsilon, self.decay = epsilon, decay

    def run(self, p, grads):
        m, v = np.zeros_like(p), np.zeros_like(p)
        for iterations, g in enumerate(grads):
            lr = self.lr * (1.0 / (1.0 + self.decay * iterations))
            t = iterations + 1
            lr_t = lr * (math.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t))
            m = self.beta_1 * m + (1.0 - self.beta_1) * g
            v = self.beta_2 * v + (1.0 - self.beta_2) * np.square(g)
            p = p - lr_t * m / (np.sqrt(v) + self.epsilon)
        return p


CASES = {
    "sgd": (lambda: SGDUpdater(0.1), KerasSGD(0.1)),
    "sgd-decay": (lambda: SGDUpdater(0.1, decay=0.5), KerasSGD(0.1, decay=0.5)),
    "sgd-momentum": (lambda: SGDUpdater(0.05, momentum=0.9), KerasSGD(0.05, 0.9)),
    "sgd-nesterov": (lambda: SGDUpdater(0.05, momentum=0.9, nesterov=True),
                     KerasSGD(0.05, 0.9, nesterov=True)),
    "sgd-nesterov-decay": (lambda: SGDUpdater(0.05, momentum=0.8, nesterov=True, decay=0.1),
                           KerasSGD(0.05, 0.8, nesterov=True, decay=0.1)),
    "rmsprop": (lambda: RMSpropUpdater(0.001), KerasRMSprop(0.001)),
    "rmsprop-rho-decay": (lambda: RMSpropUpdater(0.01, rho=0.8, decay=0.2),
                          KerasRMSprop(0.01, rho=0.8, decay=0.2)),
    "adadelta": (lambda: AdadeltaUpdater(1.0), KerasAdadelta(1.0)),
    "adadelta-decay": (lambda: AdadeltaUpdater(0.5, rho=0.9, decay=0.3),
                       KerasAdadelta(0.5, rho=0.9, decay=0.3)),
    "adam": (lambda: AdamUpdater(0.001), KerasAdam(0.001)),
    "adam-betas-decay": (lambda: AdamUpdater(0.01, beta_1=0.8, beta_2=0.99, decay=0.25),
                         KerasAdam(0.01, beta_1=0.8, beta_2=0.99, decay=0.25)),
}


def gradients(rng, steps=STEPS, size=SIZE):
    # mixed magnitudes so epsilon terms and sqrt of tiny accumulators matter somewhere
    scale = 10.0 ** rng.uniform(-4, 1, size=size)
    return [(rng.normal(size=size) * scale).astype(np.float32) for _ in range(steps)]


@pytest.mark.parametrize("case", list(CASES))
def test_updater_matches_keras2_over_three_steps(case):
    make_updater, keras = CASES[case]
    rng = np.random.default_rng(sorted(CASES).index(case))
    # small weights: float32 rounding of w + change stays far below the change itself
    w0 = (rng.normal(size=SIZE) * 1e-4).astype(np.float32)
    grads = gradients(rng)
    updater = make_updater()
    w = w0.copy()
    for step, g in enumerate(grads):
        updater.apply(w, g.copy())
        assert updater.iterations == step + 1
        expected = keras.run(w0.astype(np.float64), [x.astype(np.float64) for x in
                                                     grads[:step + 1]])
        # float32 kernels vs float64 reference: compare the change, relative to its size
        change, expected_change = w.astype(np.float64) - w0, expected - w0
        np.testing.assert_allclose(change, expected_change, rtol=1e-4,
                                   atol=1e-6 * np.abs(expected_change).max(),
                                   err_msg=f"{case} step {step + 1}")


@pytest.mark.parametrize("case", list(CASES))
def test_zero_padding_stays_zero(case):
    """Blocked layouts pad with zeros: a zero value with zero gradient must stay zero."""
    updater = CASES[case][0]()
    w = np.zeros(1000, np.float32)
    w[:500] = 1.0
    g = np.zeros(1000, np.float32)
    g[:500] = 0.5
    for _ in range(STEPS):
        updater.apply(w, g)
    assert np.all(w[500:] == 0.0)
    assert np.all(w[:500] != 1.0)
    assert all(np.all(state[500:] == 0.0) for state in updater.state)


def test_decay_schedule():
    updater = SGDUpdater(0.3, decay=0.5)
    rates = []
    w, g = np.zeros(4, np.float32), np.ones(4, np.float32)
    for _ in range(4):
        rates.append(updater.current_learning_rate())
        updater.apply(w, g)
    np.testing.assert_allclose(rates, [0.3 / (1 + 0.5 * i) for i in range(4)])
    np.testing.assert_allclose(w, -sum(rates), rtol=1e-6)


def test_state_is_reset_when_the_arena_size_changes():
    updater = SGDUpdater(0.1, momentum=0.9)
    updater.apply(np.zeros(8, np.float32), np.ones(8, np.float32))
    assert updater.state[0].shape == (8,)
    w = np.zeros(16, np.float32)
    updater.apply(w, np.ones(16, np.float32))
    assert updater.state[0].shape == (16,)
    np.testing.assert_allclose(w, -0.1)  # fresh velocity: no momentum carried over


def test_state_persists_between_steps():
    """Momentum really accumulates in the updater (not recomputed from scratch)."""
    updater = SGDUpdater(1.0, momentum=0.5)
    w, g = np.zeros(3, np.float32), np.ones(3, np.float32)
    updater.apply(w, g)
    updater.apply(w, g)
    np.testing.assert_allclose(w, -1.0 + (-0.5 - 1.0))
