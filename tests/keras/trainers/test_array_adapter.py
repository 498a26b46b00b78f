"""The numpy-array data adapter: batches equal x[order] exactly, weights follow Keras, and bad
input fails up front with the argument and the expected value."""

import numpy as np
import pytest

from kiln.keras.trainers.data_adapters import (
    ModelSignature,
    class_weight_to_sample_weights,
    get_data_adapter,
)

SIGNATURE = ModelSignature(input_shapes=[(3,), (2, 2)], input_names=["a", "b"],
                           output_shapes=[(4,)], output_names=["out"])


def gather(adapter):
    batches = []
    for xs, ys, weights in adapter.batches():
        for array in xs:
            assert array.dtype == np.float32 and array.flags.c_contiguous
            assert array.ctypes.data % 64 == 0
        batches.append(([a.copy() for a in xs], None if ys is None else [a.copy() for a in ys],
                         None if weights is None else [w.copy() for w in weights]))
    return batches


def test_two_inputs_labels_and_sample_weights_in_order_without_shuffle():
    rng = np.random.default_rng(0)
    a, b = rng.random((10, 3)), rng.integers(0, 9, (10, 2, 2)).astype(np.uint8)
    y, w = rng.random((10, 4)), rng.random(10)
    adapter = get_data_adapter({"b": b, "a": a}, y, sample_weight=w, batch_size=4,
                               shuffle=False, signature=SIGNATURE)
    batches = gather(adapter)
    assert adapter.steps == 3 and [len(x[0]) for x, _, _ in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([x[0] for x, _, _ in batches]),
                                  a.astype(np.float32))
    np.testing.assert_array_equal(np.concatenate([x[1] for x, _, _ in batches]), b)
    np.testing.assert_array_equal(np.concatenate([ys[0] for _, ys, _ in batches]),
                                  y.astype(np.float32))
    np.testing.assert_array_equal(np.concatenate([ws[0] for _, _, ws in batches]),
                                  w.astype(np.float32))


def test_shuffle_draws_from_numpys_global_generator():
    x = np.arange(20, dtype=np.float32).reshape(20, 1)
    signature = ModelSignature(input_shapes=[(1,)])
    np.random.seed(5)
    first = np.concatenate([xs[0][:, 0] for xs, _, _ in gather(
        get_data_adapter(x, batch_size=6, signature=signature))])
    np.random.seed(5)
    again = np.concatenate([xs[0][:, 0] for xs, _, _ in gather(
        get_data_adapter(x, batch_size=6, signature=signature))])
    np.random.seed(5)
    np.testing.assert_array_equal(first, np.random.permutation(20))
    np.testing.assert_array_equal(first, again)
    assert sorted(first) == list(range(20))


def test_batch_shuffle_keeps_each_batch_within_one_block_of_batch_size():
    x = np.arange(12, dtype=np.float32).reshape(12, 1)
    batches = gather(get_data_adapter(x, batch_size=4, shuffle="batch",
                                      signature=ModelSignature(input_shapes=[(1,)])))
    for xs, _, _ in batches:
        assert len({int(v) // 4 for v in xs[0][:, 0]}) == 1


def test_steps_per_epoch_caps_the_batches_and_sets_the_batch_size_when_missing():
    x = np.zeros((10, 1))
    signature = ModelSignature(input_shapes=[(1,)])
    assert get_data_adapter(x, batch_size=2, steps_per_epoch=3, signature=signature).steps == 3
    adapter = get_data_adapter(x, steps_per_epoch=3, signature=signature)
    assert adapter.batch_size == 4 and adapter.steps == 3


def test_class_weight_becomes_sample_weight_as_in_keras():
    import os
    os.environ.setdefault("KERAS_BACKEND", "jax")
    from keras.src.trainers.data_adapters import data_adapter_utils
    one_hot = np.eye(3)[[0, 2, 1, 2]]
    sparse = np.array([[0], [2], [1], [2]])
    weights = {0: 0.5, 2: 3.0}
    for labels in (one_hot, sparse, sparse[:, 0]):
        np.testing.assert_array_equal(
            class_weight_to_sample_weights(labels, weights),
            data_adapter_utils.class_weight_to_sample_weights(labels, weights))
    adapter = get_data_adapter(np.zeros((4, 1)), one_hot, class_weight=weights, batch_size=4,
                               shuffle=False, signature=ModelSignature(input_shapes=[(1,)]))
    (_, _, sample_weights), = gather(adapter)
    np.testing.assert_array_equal(sample_weights[0], [0.5, 3.0, 1.0, 3.0])


def test_one_sample_weight_array_serves_every_output():
    signature = ModelSignature(input_shapes=[(1,)], output_names=["p", "q"])
    adapter = get_data_adapter(np.zeros((3, 1)), [np.zeros((3, 1)), np.ones((3, 2))],
                               sample_weight=np.array([1.0, 2.0, 3.0]), batch_size=3,
                               shuffle=False, signature=signature)
    (_, ys, weights), = gather(adapter)
    assert len(ys) == 2 and len(weights) == 2
    np.testing.assert_array_equal(weights[1], [1, 2, 3])


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(batch_size=0), r"fit: argument batch_size must be a positive int, got 0"),
    (dict(batch_size=-3), r"batch_size must be a positive int, got -3"),
    (dict(steps_per_epoch=0), r"steps_per_epoch must be a positive int, got 0"),
])
def test_bad_counts(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        get_data_adapter(np.zeros((4, 1)), np.zeros((4, 1)),
                         signature=ModelSignature(input_shapes=[(1,)]), **kwargs)


def test_empty_x_names_the_argument():
    with pytest.raises(ValueError, match=r"fit: argument x is empty \(0 samples, shape "
                                         r"\(0, 1\)\); expected at least one sample"):
        get_data_adapter(np.zeros((0, 1)), np.zeros((0, 1)),
                         signature=ModelSignature(input_shapes=[(1,)]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_found_with_their_sample(bad):
    x = np.zeros((300_000, 2), np.float32)  # several blocks of the parallel check
    x[200_001, 1] = bad
    with pytest.raises(ValueError, match=rf"argument x holds {bad} at index \(200001, 1\) "
                                         r"\(sample 200001\); expected finite numbers"):
        get_data_adapter(x, np.zeros((300_000, 1)), signature=ModelSignature([(2,)]))
    y = np.zeros((4, 2))
    y[3, 0] = bad
    with pytest.raises(ValueError, match=r"argument y holds .* \(sample 3\)"):
        get_data_adapter(np.zeros((4, 1)), y, signature=ModelSignature([(1,)]))


def test_shape_dtype_and_count_errors_name_argument_and_expected_value():
    signature = ModelSignature(input_shapes=[(3,)], output_shapes=[(4,)], owner="evaluate")
    with pytest.raises(ValueError, match=r"evaluate: argument x must have shape \(batch, 3\), "
                                         r"got \(5, 2\)"):
        get_data_adapter(np.zeros((5, 2)), np.zeros((5, 4)), signature=signature)
    with pytest.raises(ValueError, match=r"argument y must have shape \(batch, 4\), got "
                                         r"\(5, 3\)"):
        get_data_adapter(np.zeros((5, 3)), np.zeros((5, 3)), signature=signature)
    with pytest.raises(ValueError, match=r"argument x must be a numeric array \(float or "
                                         r"int\), got dtype <U1"):
        get_data_adapter(np.array([["a", "b", "c"]]), np.zeros((1, 4)), signature=signature)
    with pytest.raises(ValueError, match=r"same number of samples, got \{'x': 5, 'y': 4\}"):
        get_data_adapter(np.zeros((5, 3)), np.zeros((4, 4)), signature=signature)
    with pytest.raises(ValueError, match=r"argument x has no entry for \['b'\]"):
        get_data_adapter({"a": np.zeros((5, 3))}, signature=SIGNATURE)
