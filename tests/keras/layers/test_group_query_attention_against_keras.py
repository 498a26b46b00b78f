"""GroupQueryAttention against real Keras 3 (JAX backend): weight names, shapes and order,
predictions and training steps (SGD, Adam) from the same weights for grouped, multi-query and
multi-head cases, query and value of different lengths, attention_mask, use_causal_mask, the
padding masks of Embedding(mask_zero=True), return_attention_scores, dropout; get_config and
the errors for bad arguments and inputs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import build_pair, check_against_keras, check_predict, real_keras  # noqa: E402
from test_multi_head_attention_against_keras import (  # noqa: E402
    PADDED,
    check_training_as_keras,
)

from kiln import keras as kk  # noqa: E402


def self_attention(query_heads, kv_heads):
    def build(K):
        inputs = K.Input((5, 6))
        x = K.layers.GroupQueryAttention(head_dim=3, num_query_heads=query_heads,
                                         num_key_value_heads=kv_heads, name="gqa")(
            inputs, inputs)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    return build


def test_grouped_query_attention_weights_predict_and_train_as_keras():
    query_heads, kv_heads = 4, 2  # multi-query (1 key / value head): the causal test
    kiln_model, _ = check_against_keras(self_attention(query_heads, kv_heads), train=False)
    check_training_as_keras(self_attention(query_heads, kv_heads), ("sgd",))
    gqa = kiln_model.get_layer("gqa")
    assert [(w.path, tuple(w.shape)) for w in gqa.weights] == [
        ("gqa/query/kernel", (6, query_heads, 3)), ("gqa/query/bias", (query_heads, 3)),
        ("gqa/key/kernel", (6, kv_heads, 3)), ("gqa/key/bias", (kv_heads, 3)),
        ("gqa/value/kernel", (6, kv_heads, 3)), ("gqa/value/bias", (kv_heads, 3)),
        ("gqa/attention_output/kernel", (query_heads, 3, 6)),
        ("gqa/attention_output/bias", (6,))]


def cross_attention(K):
    """Query, value and key of different lengths (key of another size), a mask, no bias."""
    query, value, key, mask = K.Input((4, 6)), K.Input((7, 6)), K.Input((7, 3)), \
        K.Input((4, 7))
    x = K.layers.GroupQueryAttention(2, 4, 2, use_bias=False, name="gqa")(
        query, value, key=key, attention_mask=mask)
    x = K.layers.Flatten()(x)
    return K.Model([query, value, key, mask], K.layers.Dense(3, activation="softmax")(x))


def test_cross_attention_with_an_attention_mask_as_keras():
    rng = np.random.default_rng(3)
    mask = (rng.random((6, 4, 7)) > 0.4).astype(np.float32)
    mask[0, 2] = 0.0  # Keras's fused attention: a row masked everywhere is uniform
    inputs = [rng.standard_normal((6, *shape)).astype(np.float32)
              for shape in ((4, 6), (7, 6), (7, 3))] + [mask]
    check_against_keras(cross_attention, inputs=inputs, optimizers=("adam",), steps=1)


def padded_model(causal):
    def build(K):
        tokens = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 8, mask_zero=True)(tokens)
        x = K.layers.GroupQueryAttention(4, 4, 2, name="gqa")(x, x, use_causal_mask=causal)
        x = K.layers.GlobalAveragePooling1D()(x)
        return K.Model(tokens, K.layers.Dense(3, activation="softmax")(x))

    return build


def test_padding_masks_and_causal_as_keras():
    check_against_keras(padded_model(True), inputs=PADDED, train=False)
    check_training_as_keras(padded_model(True), ("sgd",), inputs=PADDED)


def test_causal_alone_as_keras_later_steps_do_not_move_earlier_ones():
    def build(K):
        inputs = K.Input((6, 4))
        x = K.layers.GroupQueryAttention(2, 4, 1, name="gqa")(inputs, inputs,
                                                              use_causal_mask=True)
        return K.Model(inputs, K.layers.Flatten()(x))

    kiln_model, _ = check_against_keras(build, train=False)
    x = np.random.default_rng(0).standard_normal((2, 6, 4)).astype(np.float32)
    later = x.copy()
    later[:, 3:] += 1.0
    np.testing.assert_allclose(kiln_model.predict(later, verbose=0)[:, :12],
                               kiln_model.predict(x, verbose=0)[:, :12], rtol=1e-5, atol=1e-6)


def gated_window_model(causal):
    def build(K):
        inputs = K.Input((6, 4))
        x = K.layers.GroupQueryAttention(2, 4, 2, use_gate=True, sliding_window=2,
                                         name="gqa")(inputs, inputs, use_causal_mask=causal)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    return build


def test_use_gate_and_sliding_window_as_keras():
    causal = False  # the causal triangle ANDs with the band as with any mask
    kiln_model, _ = check_against_keras(gated_window_model(causal), optimizers=("sgd",),
                                        steps=1)
    assert [w.path for w in kiln_model.get_layer("gqa").weights][4:6] == [
        "gqa/gate/kernel", "gqa/gate/bias"]
    # step 0 sees steps 0 and 1 only (|i - j| < 2), causal: step 0 only
    x = np.random.default_rng(0).standard_normal((2, 6, 4)).astype(np.float32)
    probe = kk.Model(kiln_model.input, kiln_model.get_layer("gqa").output)
    later = x.copy()
    later[:, 1 if causal else 2:] += 1.0
    np.testing.assert_allclose(probe.predict(later, verbose=0)[:, 0],
                               probe.predict(x, verbose=0)[:, 0], rtol=1e-5, atol=1e-6)


def scores_model(K):
    tokens = K.Input((5,), dtype="int32")
    x = K.layers.Embedding(10, 6, mask_zero=True)(tokens)
    output, scores = K.layers.GroupQueryAttention(2, 4, 2, name="gqa")(
        x, x, return_attention_scores=True, use_causal_mask=True)
    return K.Model(tokens, [output, scores])


def test_return_attention_scores_as_keras():
    kiln_model, _ = check_against_keras(scores_model, inputs=PADDED, train=False)
    output, scores = kiln_model.predict(PADDED, verbose=0)
    assert output.shape == (6, 5, 6) and scores.shape == (6, 4, 5, 5)
    np.testing.assert_array_equal(scores[1, :, 2:], 0.0)  # the Softmax layer's zeros
    np.testing.assert_array_equal(np.triu(scores[0], 1), 0.0)  # causal


def dropout_model(rate):
    def build(K):
        inputs = K.Input((4, 6))
        x = K.layers.GroupQueryAttention(3, 2, 1, dropout=rate, seed=1, name="gqa")(
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


def test_get_config_as_keras_and_round_trip():
    keras = real_keras()
    arguments = dict(head_dim=3, num_query_heads=4, num_key_value_heads=2, dropout=0.1,
                     use_bias=False, use_gate=True, sliding_window=3, seed=5, name="gqa")
    kiln_layer = kk.layers.GroupQueryAttention(**arguments)
    keras_layer = keras.layers.GroupQueryAttention(**arguments)
    kiln_layer(kk.Input((5, 6)), kk.Input((5, 6)))
    keras_layer(keras.Input((5, 6)), keras.Input((5, 6)))
    config, expected = kiln_layer.get_config(), keras_layer.get_config()
    assert sorted(config) == sorted(expected)
    for key in ("head_dim", "num_query_heads", "num_key_value_heads", "dropout", "use_bias",
                "use_gate", "sliding_window", "seed", "kernel_initializer",
                "bias_initializer"):
        assert config[key] == expected[key], key
    rebuilt = kk.layers.GroupQueryAttention.from_config(config)
    assert rebuilt.get_config()["num_key_value_heads"] == 2
    assert kk.layers.GroupQueryAttention is kk.layers.GroupedQueryAttention


def test_bad_arguments_and_inputs_name_the_layer_and_the_argument():
    context = "GroupedQueryAttention 'gqa'"
    for arguments, match in (
            (dict(head_dim=4, num_query_heads=3, num_key_value_heads=2),
             "num_query_heads must be divisible by num_key_value_heads"),
            (dict(head_dim=0, num_query_heads=2, num_key_value_heads=1),
             "head_dim must be a positive int, got 0"),
            (dict(head_dim=4, num_query_heads=2, num_key_value_heads=1, dropout=1.5),
             "dropout must be a float"),
            (dict(head_dim=4, num_query_heads=2, num_key_value_heads=1, dropout=0.1,
                  flash_attention=True), "dropout must be 0.0 with flash_attention")):
        with pytest.raises(ValueError, match=f"{context}: argument {match}"):
            kk.layers.GroupQueryAttention(name="gqa", **arguments)
    with pytest.raises(ValueError, match=f"{context}: argument sliding_window must be None "
                                         "or a positive int, got 0"):
        kk.layers.GroupQueryAttention(4, 2, 1, sliding_window=0, name="gqa")
    query, value = kk.Input((5, 6)), kk.Input((7, 6))
    with pytest.raises(ValueError, match=rf"{context}: argument attention_mask.*\(None, 5, 7\)"):
        kk.layers.GroupQueryAttention(4, 2, 1, name="gqa")(query, value,
                                                           attention_mask=kk.Input((7, 5)))
    with pytest.raises(ValueError, match=rf"{context}: argument query must be a 3D tensor"):
        kk.layers.GroupQueryAttention(4, 2, 1, name="gqa")(kk.Input((6,)), value)
    with pytest.raises(ValueError, match=rf"{context}: argument value must be a 3D tensor"):
        kk.layers.GroupQueryAttention(4, 2, 1, name="gqa")(query, kk.Input((2, 3, 6)))
    with pytest.raises(ValueError, match=f"{context}: argument value_mask must be a tensor "
                                         r"of shape \(batch, 7\)"):
        kk.layers.GroupQueryAttention(4, 2, 1, name="gqa")(query, value,
                                                           value_mask=kk.Input((5,)))
    with pytest.raises(ValueError, match=f"{context}: the last dimension of query and value"):
        kk.layers.GroupQueryAttention(4, 2, 1, name="gqa")(query, kk.Input((7, 4)))


def test_flash_attention_computes_the_same_result():
    x = np.random.default_rng(1).standard_normal((2, 5, 6)).astype(np.float32)
    models = []
    for flash in (None, True):
        inputs = kk.Input((5, 6))
        layer = kk.layers.GroupQueryAttention(3, 4, 2, flash_attention=flash)
        models.append(kk.Model(inputs, layer(inputs, inputs)))
    models[1].set_weights(models[0].get_weights())
    np.testing.assert_allclose(models[1].predict(x, verbose=0),
                               models[0].predict(x, verbose=0), rtol=1e-6, atol=1e-7)


def test_a_keras_file_saved_by_keras_loads_and_predicts_the_same(tmp_path):
    kiln_model, keras_model, x = build_pair(self_attention(4, 2))
    path = str(tmp_path / "gqa.keras")
    keras_model.save(path)
    loaded = kk.models.load_model(path)
    assert [w.path for w in loaded.weights] == [w.path for w in kiln_model.weights]
    np.testing.assert_allclose(loaded.predict(x, verbose=0),
                               np.asarray(keras_model.predict(x, verbose=0)), rtol=1e-4,
                               atol=1e-6)
    again = str(tmp_path / "again.keras")
    loaded.save(again)
    np.testing.assert_allclose(kk.models.load_model(again).predict(x, verbose=0),
                               loaded.predict(x, verbose=0), rtol=1e-6)
