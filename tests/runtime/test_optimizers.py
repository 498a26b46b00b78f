"""kiln.runtime.optimizers mechanics: zero padding stays zero, slots follow weights by name
when the packing changes, state round trips bit for bit, and a step allocates nothing.
(The update rules themselves are checked against real Keras in tests/keras/optimizers/.)"""

import tracemalloc

import numpy as np
import pytest

from kiln.runtime.optimizers import (
    AdadeltaUpdater,
    AdagradUpdater,
    AdamaxUpdater,
    AdamUpdater,
    LionUpdater,
    NadamUpdater,
    RMSpropUpdater,
    SGDUpdater,
)

CLIPS = [{}, {"clipnorm": 0.5}, {"clipvalue": 0.01}, {"global_clipnorm": 1.0}]
UPDATERS = {
    "sgd": lambda **o: SGDUpdater(0.1, **o),
    "sgd-nesterov": lambda **o: SGDUpdater(0.05, momentum=0.9, nesterov=True, **o),
    "rmsprop-centered-momentum": lambda **o: RMSpropUpdater(0.01, momentum=0.5, centered=True,
                                                            **o),
    "adam-amsgrad": lambda **o: AdamUpdater(0.01, amsgrad=True, **o),
    "nadam": lambda **o: NadamUpdater(0.01, **o),
    "adamax": lambda **o: AdamaxUpdater(0.01, **o),
    "adagrad": lambda **o: AdagradUpdater(0.01, **o),
    "adadelta": lambda **o: AdadeltaUpdater(1.0, **o),
    "lion": lambda **o: LionUpdater(0.01, **o),
}
# three weights; the second is padded inside its segment; gaps between segments
SEGMENTS = (("a/kernel", 0, 700), ("a/bias", 704, 730), ("b/kernel", 736, 1536))
REAL = {"a/kernel": 700, "a/bias": 10, "b/kernel": 800}


def arena(seed=0):
    rng = np.random.default_rng(seed)
    values, grads = np.zeros(1600, np.float32), np.zeros(1600, np.float32)
    for name, start, _ in SEGMENTS:
        values[start:start + REAL[name]] = rng.normal(size=REAL[name])
    values[1536:] = 7.0  # frozen, after the trainable region
    return values, grads


def fill(grads, rng):
    for name, start, _ in SEGMENTS:
        grads[start:start + REAL[name]] = rng.normal(size=REAL[name]) * 0.1


@pytest.mark.parametrize("clip", CLIPS, ids=lambda c: "-".join(c) or "noclip")
@pytest.mark.parametrize("name", list(UPDATERS))
def test_padding_gaps_and_frozen_values_never_move(name, clip):
    updater = UPDATERS[name](weight_decay=0.1, **clip)
    values, grads = arena()
    rng = np.random.default_rng(1)
    start = values.copy()
    for _ in range(3):
        fill(grads, rng)
        updater.apply(values, grads, SEGMENTS)
    outside = np.ones(values.size, bool)
    for segment, begin, _ in SEGMENTS:
        outside[begin:begin + REAL[segment]] = False
        assert np.all(values[begin:begin + REAL[segment]] != start[begin:begin + REAL[segment]])
    np.testing.assert_array_equal(values[outside], start[outside])
    assert updater.iterations == 3


def test_slots_follow_weights_by_name_when_the_packing_changes():
    """Freezing 'a/bias' repacks the arena: the other weights keep their moments."""
    updater = AdamUpdater(0.01)
    values, grads = arena()
    rng = np.random.default_rng(2)
    for _ in range(2):
        fill(grads, rng)
        updater.apply(values, grads, SEGMENTS)
    before = updater.get_state()
    repacked = (("a/kernel", 0, 700), ("b/kernel", 704, 1504))
    new_values = np.zeros(1600, np.float32)
    new_values[:700], new_values[704:1504] = values[:700], values[736:1536]
    updater.apply(new_values, np.zeros(1600, np.float32), repacked)
    after = updater.get_state()
    assert after["momentum"].size == 1504
    # one more step with zero gradient: m *= beta_1, so the old moments must be there
    np.testing.assert_allclose(after["momentum"][:700], 0.9 * before["momentum"][:700],
                               rtol=1e-6)
    np.testing.assert_allclose(after["momentum"][704:1504],
                               0.9 * before["momentum"][736:1536], rtol=1e-6)


def test_plain_arrays_are_one_weight_and_a_new_size_starts_fresh():
    updater = SGDUpdater(0.1, momentum=0.9)
    updater.apply(np.zeros(8, np.float32), np.ones(8, np.float32))
    assert updater.get_state()["momentum"].shape == (8,)
    w = np.zeros(16, np.float32)
    updater.apply(w, np.ones(16, np.float32))
    np.testing.assert_allclose(w, -0.1)  # fresh momentum: nothing carried over


@pytest.mark.parametrize("name", list(UPDATERS))
def test_state_round_trip_resumes_bit_for_bit(name):
    """3 steps == 2 steps, get_state, a fresh updater with set_state (before it has seen the
    arena), 1 step."""
    rng = np.random.default_rng(3)
    grads_seq = []
    for _ in range(3):
        g = np.zeros(1600, np.float32)
        fill(g, rng)
        grads_seq.append(g)
    straight = UPDATERS[name](clipnorm=0.5, weight_decay=0.01)
    values, grads = arena()
    for g in grads_seq:
        grads[...] = g
        straight.apply(values, grads, SEGMENTS)

    first = UPDATERS[name](clipnorm=0.5, weight_decay=0.01)
    resumed_values, grads = arena()
    for g in grads_seq[:2]:
        grads[...] = g
        first.apply(resumed_values, grads, SEGMENTS)
    state = first.get_state()
    second = UPDATERS[name](clipnorm=0.5, weight_decay=0.01)
    second.set_state(state)
    copy, grads = resumed_values.copy(), np.zeros(1600, np.float32)
    grads[...] = grads_seq[2]
    second.apply(copy, grads, SEGMENTS)
    np.testing.assert_array_equal(copy, values)
    assert second.iterations == 3
    for key, value in straight.get_state().items():
        np.testing.assert_array_equal(second.get_state()[key], value, err_msg=key)


def test_set_state_checks_names_and_sizes():
    updater = AdamUpdater(0.01)
    with pytest.raises(ValueError, match=r"AdamUpdater.set_state: unknown entries \['moment'\]"):
        updater.set_state({"moment": np.zeros(3)})
    updater.set_state({"iterations": np.array(4), "momentum": np.zeros(10, np.float32)})
    assert updater.iterations == 4
    values, grads = arena()
    with pytest.raises(ValueError, match=r"slot 'momentum' has 10 values, expected 1536"):
        updater.apply(values, grads, SEGMENTS)


def test_a_step_allocates_nothing():
    """After the first step binds the arena, steps allocate no array: tracemalloc sees numpy's
    data allocations, and an arena-sized temporary would be 4 MB."""
    size = 1_000_000
    segments = (("w", 0, 600_000), ("b", 600_000, size))
    for updater in (AdamUpdater(0.01, clipnorm=1.0, weight_decay=0.1),
                    RMSpropUpdater(0.01, centered=True, global_clipnorm=1.0),
                    NadamUpdater(0.01, clipvalue=0.1)):
        values = np.ones(size, np.float32)
        grads = np.full(size, 0.01, np.float32)
        updater.apply(values, grads, segments)
        tracemalloc.start()
        for _ in range(5):
            updater.apply(values, grads, segments)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 64 * 1024, f"{type(updater).__name__}: {peak} bytes"


def test_keras2_decay_and_callable_learning_rate():
    rates = []
    updater = SGDUpdater(lambda iterations: 0.3 * 0.5 ** iterations, decay=0.5)
    w, g = np.zeros(4, np.float32), np.ones(4, np.float32)
    for _ in range(4):
        rates.append(updater.current_learning_rate())
        updater.apply(w, g)
    np.testing.assert_allclose(rates, [0.3 * 0.5 ** i / (1 + 0.5 * i) for i in range(4)])
    np.testing.assert_allclose(w, -sum(rates), rtol=1e-6)
