"""stateful=True: the final states of one batch are the initial states of the next, in
predict and train_on_batch, until reset_state(). Keras 3's JAX backend does not carry the
states of a stateful layer between calls (its states stay zero), so the oracle is Keras's
stateless layer given the previous batch's final states as initial_state."""

import keras_oracle
import numpy as np
import pytest

from kiln import keras as kk

keras_real = keras_oracle.real_keras()  # the JAX backend (the module is skipped without it)

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

B, T, C, UNITS = 4, 5, 3, 3
KINDS = {"lstm": ("LSTM", 2), "gru": ("GRU", 1), "simple_rnn": ("SimpleRNN", 1)}


def kiln_model(kind):
    name, _ = KINDS[kind]
    inputs = kk.Input((T, C), batch_size=B)
    layer = getattr(kk.layers, name)(UNITS, stateful=True)
    model = kk.Model(inputs, kk.layers.Dense(2, activation="softmax")(layer(inputs)))
    model.compile(optimizer=kk.optimizers.SGD(0.5), loss="categorical_crossentropy")
    return model, layer


def keras_models(kind):
    """Keras's stateless layer with the states as inputs: (the classifier, the states)."""
    name, count = KINDS[kind]
    sequence = keras_real.Input((T, C))
    states = [keras_real.Input((UNITS,)) for _ in range(count)]
    output, *finals = getattr(keras_real.layers, name)(UNITS, return_state=True)(
        sequence, initial_state=states)
    head = keras_real.layers.Dense(2, activation="softmax")(output)
    classifier = keras_real.Model([sequence, *states], head)
    classifier.compile(optimizer=keras_real.optimizers.SGD(0.5),
                       loss="categorical_crossentropy")
    return classifier, keras_real.Model([sequence, *states], finals)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_states_carry_between_batches_until_reset(kind):
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(B, T, C)).astype(np.float32) for _ in range(5)]
    ours, layer = kiln_model(kind)
    theirs, finals = keras_models(kind)
    theirs.set_weights(ours.get_weights())
    zeros = [np.zeros((B, UNITS), np.float32)] * KINDS[kind][1]
    states = zeros
    for index, x in enumerate(batches):
        if index == 3:
            layer.reset_states()
            states = zeros
        expected = theirs.predict([x, *states], verbose=0)
        np.testing.assert_allclose(ours.predict(x, batch_size=B, verbose=0), expected,
                                   rtol=1e-4, atol=1e-6)
        states = finals.predict([x, *states], verbose=0)
        states = states if isinstance(states, list) else [states]
        for kept, state in zip(layer.states, states, strict=True):
            np.testing.assert_allclose(kept, state, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_train_on_batch_carries_the_states(kind):
    rng = np.random.default_rng(1)
    ours, layer = kiln_model(kind)
    theirs, finals = keras_models(kind)
    theirs.set_weights(ours.get_weights())
    states = [np.zeros((B, UNITS), np.float32)] * KINDS[kind][1]
    for _ in range(3):
        x = rng.normal(size=(B, T, C)).astype(np.float32)
        y = np.eye(2, dtype=np.float32)[rng.integers(0, 2, B)]
        next_states = finals.predict([x, *states], verbose=0)  # the weights before the step
        np.testing.assert_allclose(ours.train_on_batch(x, y), theirs.train_on_batch(
            [x, *states], y), rtol=1e-4, atol=1e-6)
        for got, want in zip(ours.get_weights(), theirs.get_weights(), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        states = next_states if isinstance(next_states, list) else [next_states]


def test_stateful_without_a_fixed_batch_size_names_the_layer():
    with pytest.raises(ValueError, match=r"LSTM 's'.*stateful=True.*batch size must be static"):
        kk.layers.LSTM(3, stateful=True, name="s")(kk.Input((T, C)))


def test_reset_state_spellings_and_wrong_batch_size():
    model, layer = kiln_model("gru")
    model.predict(np.ones((B, T, C), np.float32), batch_size=B, verbose=0)
    assert np.any(layer.states[0] != 0)
    layer.reset_state()
    assert np.all(layer.states[0] == 0)
    with pytest.raises(ValueError, match="stateful"):
        model.predict(np.ones((2 * B, T, C), np.float32), batch_size=2 * B, verbose=0)


def test_fit_carries_the_states_through_the_batches_of_an_epoch():
    """A Sequential with Keras 2's batch_input_shape: fit over two batches of 4 without
    shuffling leaves the final states of the second batch (from the first's)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2 * B, T, C)).astype(np.float32)
    model = kk.Sequential([kk.layers.SimpleRNN(UNITS, stateful=True,
                                               batch_input_shape=(B, T, C)),
                           kk.layers.Dense(2)])
    model.compile(optimizer=kk.optimizers.SGD(0.0), loss="mse")  # the weights stay
    model.fit(x, np.zeros((2 * B, 2), np.float32), batch_size=B, shuffle=False, verbose=0)
    layer = model.layers[0]
    kernel, recurrent, bias = layer.get_weights()
    h = np.zeros((B, UNITS), np.float32)
    for batch in (x[:B], x[B:]):
        for t in range(T):
            h = np.tanh(batch[:, t] @ kernel + h @ recurrent + bias)
    np.testing.assert_allclose(layer.states[0], h, rtol=1e-5, atol=1e-6)


def test_stateful_bidirectional_carries_and_resets():
    """Both directions keep their states (two recurrent ops); reset_state() zeroes both."""
    inputs = kk.Input((T, C), batch_size=B)
    wrapper = kk.layers.Bidirectional(kk.layers.LSTM(UNITS, stateful=True))
    model = kk.Model(inputs, wrapper(inputs))
    x = np.random.default_rng(3).normal(size=(B, T, C)).astype(np.float32)
    first = model.predict(x, batch_size=B, verbose=0)
    assert not np.allclose(model.predict(x, batch_size=B, verbose=0), first)
    wrapper.reset_state()
    np.testing.assert_allclose(model.predict(x, batch_size=B, verbose=0), first, rtol=1e-6)
