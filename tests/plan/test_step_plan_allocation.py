"""A compiled step allocates nothing: every buffer was allocated when the plan was built."""

import tracemalloc

import pytest

from kiln.bench.peers import kiln_runner


@pytest.mark.parametrize("mode", ["train", "infer"])
def test_steps_allocate_no_buffers(mode):
    step = kiln_runner.prepare("cifar10_cnn", "channels_last", mode, "f32")
    for _ in range(3):  # first calls may load kernels
        step()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(10):
            step()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Even the smallest array of this model (the 32 x 10 output, 1.3 KB) allocated per step
    # would show here; the few hundred bytes of transient Python objects of a call do not.
    assert current - base <= 512
    assert peak - base < 1024


def test_a_kernel_reading_a_model_input_sees_each_new_batch():
    """DropoutOp right on the input is a numba kernel that reads the input's Memory at every
    run (a MemoryKernelCall): fit() re-points that Memory at the batch, no copy, and the
    kernel sees the new batch."""
    import numpy as np

    from kiln import keras
    from kiln.binding.memory import aligned_bytes
    from kiln.keras import layers

    keras.initializers.set_random_seed(0)
    inputs = keras.Input((6,))
    outputs = layers.Dense(2, activation="softmax")(layers.Dropout(0.5, seed=3)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.0))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 6)).astype(np.float32)
    y = np.eye(2, dtype=np.float32)[rng.integers(0, 2, 8)]
    plan = model._plan(True, 8)
    assert not plan._copy_inputs

    def new_batch(values):  # a new aligned array, as the batch feeder hands over
        batch = aligned_bytes(values.nbytes).view(np.float32).reshape(values.shape)
        batch[...] = values
        return batch

    plan.use_input(new_batch(np.zeros_like(x)), y)
    zero_loss = float(plan.train_step()[0])
    batch = new_batch(10 * x)
    plan.use_input(batch, y)
    assert float(plan.train_step()[0]) != zero_loss
    # the feeder hands the same staging array over again, refilled: read in place
    batch[...] = 0.0
    plan.use_input(batch, y)
    assert float(plan.train_step()[0]) == zero_loss
    plan.use_input(new_batch(10 * x), y)  # a new array: pointed at (dropout draws anew)
    assert float(plan.train_step()[0]) != zero_loss


def test_a_view_of_a_model_input_sees_each_new_batch():
    """Conv1DOp right on the input reads it through a 4D view (another Memory over the same
    bytes), which use_input() cannot re-point: the plan copies the batch in instead, so
    training sees the data predict sees (it used to train on the plan's stale buffer)."""
    import numpy as np

    from kiln import keras
    from kiln.keras import layers

    keras.initializers.set_random_seed(0)
    inputs = keras.Input((9, 3))
    x = layers.Flatten()(layers.Conv1D(4, 3)(inputs))
    model = keras.Model(inputs, layers.Dense(3, activation="softmax")(x))
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.0))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 9, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    assert model._plan(True, 6)._copy_inputs
    p = np.clip(model.predict(x, verbose=0), 1e-7, 1)
    loss = model.fit(x, y, batch_size=6, epochs=1, verbose=0).history["loss"][0]
    assert loss == pytest.approx(float(np.mean(-np.sum(y * np.log(p), -1))), rel=1e-5)
