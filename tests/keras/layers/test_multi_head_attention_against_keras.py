"""MultiHeadAttention against real Keras 3 (JAX backend): weight names, shapes and order,
predictions and training steps from the same weights for self- and cross-attention (query,
key and value of different lengths and sizes), attention_mask, use_causal_mask, the padding
masks of Embedding(mask_zero=True), return_attention_scores, dropout; get_config, a .keras
round trip and the errors for bad arguments and inputs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import (  # noqa: E402
    ATOL,
    OPTIMIZERS,
    RTOL,
    build_pair,
    check_against_keras,
    check_predict,
    random_labels,
    real_keras,
)

from kiln import keras as kk  # noqa: E402

PADDED = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [1, 1, 1, 1, 1], [2, 0, 0, 0, 0],
                   [9, 8, 7, 6, 0], [3, 0, 0, 0, 0]], dtype=np.int32)


def check_training_as_keras(build, optimizers=("sgd", "adam"), inputs=None):
    """One fit step from the same weights on both sides: the same loss and weights, except the
    key projection's bias. Its gradient is exactly zero (adding q . b_k to every score of a
    row leaves the softmax as it is), so both sides only see rounding noise there, which
    Adam would blow up to a step of its learning rate in a different direction on each side;
    it must not matter to anything else, and with SGD it stays within rounding of its start."""
    keras = real_keras()
    for name in optimizers:
        kiln_model, keras_model, x = build_pair(build, inputs=inputs)
        start = kiln_model.get_weights()
        y = random_labels(6, int(kiln_model.outputs[0].shape[-1]))
        losses = []
        for module, model in ((kk, kiln_model), (keras, keras_model)):
            model.compile(optimizer=OPTIMIZERS[name](module), loss="categorical_crossentropy")
            losses.append(model.fit(x, y, epochs=1, batch_size=6, shuffle=False,
                                    verbose=0).history["loss"][0])
        assert losses[0] == pytest.approx(float(losses[1]), rel=RTOL, abs=ATOL)
        for weight, before, kiln_value, keras_value in zip(
                kiln_model.weights, start, kiln_model.get_weights(), keras_model.get_weights()):
            if weight.path.endswith("key/bias"):
                if name == "sgd":
                    np.testing.assert_allclose(kiln_value, before, atol=1e-4)
                continue
            np.testing.assert_allclose(kiln_value, keras_value, rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name}: weight {weight.path}")


def encoder_block(K):
    """The issue's small encoder block: self-attention, a residual, a feed-forward."""
    inputs = K.Input((8, 16))
    x = K.layers.MultiHeadAttention(num_heads=2, key_dim=8)(inputs, inputs)
    x = K.layers.Add()([inputs, x])
    x = K.layers.Dense(16, activation="relu")(x)
    x = K.layers.GlobalAveragePooling1D()(x)
    return K.Model(inputs, K.layers.Dense(4, activation="softmax")(x))


def test_encoder_block_weights_predict_and_train_as_keras():
    kiln_model, _ = check_against_keras(encoder_block, train=False)
    check_training_as_keras(encoder_block)
    mha = kiln_model.layers[1]
    assert [(w.path, tuple(w.shape)) for w in mha.weights] == [
        ("multi_head_attention/query/kernel", (16, 2, 8)),
        ("multi_head_attention/query/bias", (2, 8)),
        ("multi_head_attention/key/kernel", (16, 2, 8)),
        ("multi_head_attention/key/bias", (2, 8)),
        ("multi_head_attention/value/kernel", (16, 2, 8)),
        ("multi_head_attention/value/bias", (2, 8)),
        ("multi_head_attention/attention_output/kernel", (2, 8, 16)),
        ("multi_head_attention/attention_output/bias", (16,))]


def cross_attention(K):
    """Query, key and value of different lengths and sizes, output_shape (value_dim other
    than key_dim: test_return_attention_scores_as_keras, Keras's fused path refuses it)."""
    query, value, key = K.Input((5, 6)), K.Input((7, 4)), K.Input((7, 3))
    x = K.layers.MultiHeadAttention(2, 3, value_dim=3, output_shape=5, name="mha")(
        query, value, key=key)
    x = K.layers.Flatten()(x)
    return K.Model([query, value, key], K.layers.Dense(3, activation="softmax")(x))


def test_cross_attention_of_different_lengths_as_keras():
    check_against_keras(cross_attention, train=False)
    check_training_as_keras(cross_attention)


def attention_mask_model(K):
    query, value, mask = K.Input((5, 6)), K.Input((7, 6)), K.Input((5, 7))
    x = K.layers.MultiHeadAttention(2, 4, use_bias=False, name="mha")(
        query, value, attention_mask=mask)
    x = K.layers.Flatten()(x)
    return K.Model([query, value, mask], K.layers.Dense(3, activation="softmax")(x))


def test_attention_mask_as_keras_a_row_masked_everywhere_included():
    rng = np.random.default_rng(3)
    mask = (rng.random((6, 5, 7)) > 0.4).astype(np.float32)
    mask[0, 2] = 0.0  # Keras's fused attention: a uniform row
    inputs = [rng.standard_normal((6, 5, 6)).astype(np.float32),
              rng.standard_normal((6, 7, 6)).astype(np.float32), mask]
    check_against_keras(attention_mask_model, inputs=inputs, optimizers=("sgd",), steps=1)


def test_an_int32_attention_mask_as_keras():
    def build(K):
        query, mask = K.Input((5, 6)), K.Input((5, 5), dtype="int32")
        x = K.layers.MultiHeadAttention(2, 3, name="mha")(query, query, attention_mask=mask)
        return K.Model([query, mask], K.layers.Flatten()(x))

    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((6, 5, 6)).astype(np.float32),
              (rng.random((6, 5, 5)) > 0.3).astype(np.int32) * 3]  # nonzero attends
    check_against_keras(build, inputs=inputs, train=False)


def causal_model(K):
    inputs = K.Input((6, 4))
    x = K.layers.MultiHeadAttention(2, 4, name="mha")(inputs, inputs, use_causal_mask=True)
    x = K.layers.Flatten()(x)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))


def test_causal_mask_as_keras():
    kiln_model, _ = check_against_keras(causal_model, train=False)
    check_training_as_keras(causal_model, ("adam",))
    # step 0 sees only itself: changing the later steps does not move it
    x = np.random.default_rng(0).standard_normal((2, 6, 4)).astype(np.float32)
    mha = kiln_model.layers[1]
    probe = kk.Model(kiln_model.input, mha.output)
    later = x.copy()
    later[:, 1:] += 1.0
    np.testing.assert_allclose(probe.predict(later, verbose=0)[:, 0],
                               probe.predict(x, verbose=0)[:, 0], rtol=1e-5, atol=1e-6)


def padded_model(causal):
    def build(K):
        tokens = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 8, mask_zero=True)(tokens)
        x = K.layers.MultiHeadAttention(2, 4, name="mha")(x, x, use_causal_mask=causal)
        x = K.layers.GlobalAveragePooling1D()(x)
        return K.Model(tokens, K.layers.Dense(3, activation="softmax")(x))

    return build


@pytest.mark.parametrize("causal", [False, True])
def test_embedding_padding_masks_the_keys_and_the_output_as_keras(causal):
    kiln_model, _ = check_against_keras(padded_model(causal), inputs=PADDED, train=False)
    check_training_as_keras(padded_model(causal), ("sgd",), inputs=PADDED)
    # more padding after the real tokens changes nothing: it is masked everywhere
    shorter = PADDED.copy()
    shorter[2, 4] = 0
    longer = np.concatenate([PADDED[:, :4], np.zeros((6, 1), np.int32)], axis=1)
    np.testing.assert_allclose(kiln_model.predict(longer, verbose=0)[[0, 1, 3, 4, 5]],
                               kiln_model.predict(PADDED, verbose=0)[[0, 1, 3, 4, 5]],
                               rtol=1e-5, atol=1e-6)


def scores_model(K):
    tokens = K.Input((5,), dtype="int32")
    x = K.layers.Embedding(10, 6, mask_zero=True)(tokens)
    output, scores = K.layers.MultiHeadAttention(3, 2, value_dim=4, name="mha")(
        x, x, return_attention_scores=True)
    return K.Model(tokens, [output, scores])


def test_return_attention_scores_as_keras():
    kiln_model, _ = check_against_keras(scores_model, inputs=PADDED, train=False)
    output, scores = kiln_model.predict(PADDED, verbose=0)
    assert output.shape == (6, 5, 6) and scores.shape == (6, 3, 5, 5)
    # the Softmax layer's way: a padded query step attends to nothing
    np.testing.assert_array_equal(scores[1, :, 2:], 0.0)
    np.testing.assert_allclose(scores[0, :, :3].sum(-1), 1.0, rtol=1e-6)


def dropout_model(rate):
    def build(K):
        inputs = K.Input((4, 6))
        x = K.layers.MultiHeadAttention(2, 3, dropout=rate, seed=1, name="mha")(
            inputs, inputs)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    return build


def test_dropout_changes_training_not_inference():
    kiln_model, keras_model, x = build_pair(dropout_model(0.5))
    check_predict(kiln_model, keras_model, x)  # inference: no dropout, as Keras
    without = dropout_model(0.0)(kk)
    without.set_weights(kiln_model.get_weights())
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1, 2]]
    losses = []
    for model in (kiln_model, without):
        model.compile(optimizer=kk.optimizers.SGD(0.1), loss="categorical_crossentropy")
        losses.append(model.fit(x, y, epochs=1, batch_size=6, verbose=0).history["loss"][0])
    assert losses[0] != pytest.approx(losses[1], rel=1e-4)


def test_get_config_as_keras_and_keras_file_round_trip(tmp_path):
    keras = real_keras()
    arguments = dict(num_heads=2, key_dim=3, value_dim=4, dropout=0.1, output_shape=5,
                     name="mha")
    kiln_layer = kk.layers.MultiHeadAttention(**arguments)
    keras_layer = keras.layers.MultiHeadAttention(**arguments)
    q = kk.Input((5, 6))
    kiln_layer(q, q)
    kq = keras.Input((5, 6))
    keras_layer(kq, kq)
    config, expected = kiln_layer.get_config(), keras_layer.get_config()
    assert sorted(config) == sorted(expected)
    for key in ("num_heads", "key_dim", "value_dim", "dropout", "use_bias", "output_shape",
                "attention_axes", "use_gate", "sliding_window", "seed"):
        assert config[key] == expected[key], key
    assert kk.layers.MultiHeadAttention.from_config(config).get_config()["key_dim"] == 3

    model = cross_attention(kk)
    x = [np.random.default_rng(0).standard_normal((3, *shape)).astype(np.float32)
         for shape in ((5, 6), (7, 4), (7, 3))]
    path = str(tmp_path / "mha.keras")
    model.save(path)
    loaded = kk.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    assert [w.path for w in loaded.weights] == [w.path for w in model.weights]


def test_bad_arguments_and_inputs_name_the_layer_and_the_argument():
    for arguments, match in (
            (dict(num_heads=0, key_dim=4), "num_heads must be a positive int, got 0"),
            (dict(num_heads=2, key_dim="4"), "key_dim must be a positive int, got '4'"),
            (dict(num_heads=2, key_dim=4, value_dim=-1), "value_dim must be a positive int"),
            (dict(num_heads=2, key_dim=4, dropout=1.5), "dropout must be a float")):
        with pytest.raises(ValueError, match=f"MultiHeadAttention 'mha': argument {match}"):
            kk.layers.MultiHeadAttention(name="mha", **arguments)
    with pytest.raises(NotImplementedError, match="MultiHeadAttention 'mha'.*attention_axes"):
        kk.layers.MultiHeadAttention(2, 4, attention_axes=(1, 2), name="mha")
    query, value = kk.Input((5, 6)), kk.Input((7, 6))
    with pytest.raises(ValueError, match=r"'mha'.*attention_mask.*\(None, 5, 7\).*\(None, 7, 5\)"):
        kk.layers.MultiHeadAttention(2, 4, name="mha")(query, value,
                                                       attention_mask=kk.Input((7, 5)))
    with pytest.raises(TypeError, match="MultiHeadAttention 'mha'.*symbolic tensors"):
        kk.layers.MultiHeadAttention(2, 4, name="mha")(query, value,
                                                       attention_mask=np.ones((1, 5, 7)))
    with pytest.raises(ValueError, match="'mha'.*query must be a 3D tensor.*\\(None, 6\\)"):
        kk.layers.MultiHeadAttention(2, 4, name="mha")(kk.Input((6,)), value)
    with pytest.raises(ValueError, match="'mha'.*value and key.*must be equal"):
        kk.layers.MultiHeadAttention(2, 4, name="mha")(query, value, key=kk.Input((6, 6)))
