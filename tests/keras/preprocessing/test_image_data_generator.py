"""ImageDataGenerator.flow against numpy versions of Keras 2's steps: shifts, flips, rescale,
preprocessing_function, sample- and feature-wise normalization, ZCA, validation_split and the
reproducibility of a seeded iterator."""

import numpy as np
import pytest

from kiln.keras.preprocessing.image import ImageDataGenerator, NumpyArrayIterator
from kiln.keras.utils import PyDataset

RNG = np.random.default_rng(0)
X = (RNG.random((12, 6, 7, 3)) * 255).astype(np.float32)
Y = np.arange(12, dtype=np.float32)


def all_batches(iterator):
    xs, ys = [], []
    for i in range(len(iterator)):
        x, y = iterator[i]
        xs.append(x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


def test_is_a_py_dataset_with_keras2_length_and_plain_order_without_shuffle():
    iterator = ImageDataGenerator().flow(X, Y, batch_size=5, shuffle=False)
    assert isinstance(iterator, (NumpyArrayIterator, PyDataset)) and len(iterator) == 3
    x, y = all_batches(iterator)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(y, Y)
    with pytest.raises(ValueError, match="Asked to retrieve element 3, but the Sequence has "
                                         "length 3"):
        iterator[3]


def test_preprocessing_function_runs_before_rescale_as_in_keras2():
    generator = ImageDataGenerator(rescale=0.5, preprocessing_function=lambda image: image + 1)
    x, _ = all_batches(generator.flow(X, Y, batch_size=4, shuffle=False))
    np.testing.assert_allclose(x, (X + 1) * 0.5, rtol=1e-6)


def test_horizontal_and_vertical_flips_happen_to_about_half_the_images():
    big = np.repeat(X, 20, axis=0)
    x, y = all_batches(ImageDataGenerator(horizontal_flip=True, vertical_flip=True).flow(
        big, np.arange(len(big)), batch_size=32, shuffle=False, seed=3))
    kinds = []
    for image, source in zip(x, big):
        candidates = [source, source[:, ::-1], source[::-1], source[::-1, ::-1]]
        matches = [k for k, c in enumerate(candidates) if np.array_equal(image, c)]
        assert len(matches) == 1
        kinds.append(matches[0])
    counts = np.bincount(kinds, minlength=4)
    assert all(30 <= c <= 90 for c in counts), counts


def shifted(image, rows, cols):
    """The image moved by whole pixels, edges repeated ('nearest' fill)."""
    h, w = image.shape[:2]
    r = np.clip(np.arange(h) - rows, 0, h - 1)
    c = np.clip(np.arange(w) - cols, 0, w - 1)
    return image[r][:, c]


def test_integer_shift_ranges_move_by_whole_pixels_with_nearest_fill():
    """An int n shifts by 0..n-1 pixels, a list by one of its values, either way. As in Keras
    2.x, whose matrix swap (M' = PMP) moves height_shift_range along the columns and
    width_shift_range along the rows."""
    x, _ = all_batches(ImageDataGenerator(width_shift_range=2, height_shift_range=[2]).flow(
        X, Y, batch_size=4, shuffle=False, seed=1))
    seen = set()
    for image, source in zip(x, X):
        options = {(dr, dc): shifted(source, dr, dc) for dr in (-1, 0, 1)
                   for dc in (-2, 2)}
        matches = [key for key, value in options.items() if np.allclose(image, value,
                                                                         atol=1e-3)]
        assert matches, "not a whole-pixel shift"
        seen.update(matches)
    assert len(seen) > 2


def test_channel_shift_moves_every_channel_within_the_image_range():
    x, _ = all_batches(ImageDataGenerator(channel_shift_range=40.0).flow(
        X, Y, batch_size=12, shuffle=False, seed=2))
    for image, source in zip(x, X):
        delta = (image - source)[(image > source.min()) & (image < source.max())]
        assert np.ptp(delta) < 1e-3 and abs(delta[0]) <= 40
        assert image.min() >= source.min() and image.max() <= source.max()


def test_featurewise_statistics_and_normalization_equal_numpy():
    generator = ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True,
                                   rescale=1 / 255.0)
    generator.fit(X)
    scaled = X * np.float32(1 / 255.0)
    mean = scaled.mean(axis=(0, 1, 2))
    std = (scaled - mean.reshape(1, 1, 3)).std(axis=(0, 1, 2))
    np.testing.assert_allclose(generator.mean.reshape(-1), mean, rtol=1e-5)
    np.testing.assert_allclose(generator.std.reshape(-1), std, rtol=1e-4)
    x, _ = all_batches(generator.flow(X, Y, batch_size=5, shuffle=False))
    np.testing.assert_allclose(x, (scaled - mean) / (std + 1e-6), rtol=1e-4, atol=1e-5)


def test_samplewise_normalization_uses_each_image_alone():
    generator = ImageDataGenerator(samplewise_center=True, samplewise_std_normalization=True)
    x, _ = all_batches(generator.flow(X, Y, batch_size=5, shuffle=False))
    for image, source in zip(x, X):
        centered = source - source.mean()
        np.testing.assert_allclose(image, centered / (centered.std() + 1e-6), rtol=1e-4,
                                   atol=1e-5)


def test_zca_whitening_equals_keras2_recipe():
    with pytest.warns(UserWarning, match="featurewise_center"):
        generator = ImageDataGenerator(zca_whitening=True, zca_epsilon=1e-3)
    data = X / 255.0
    generator.fit(data)
    flat = (data - data.mean(axis=(0, 1, 2))).reshape(len(data), -1)
    u, s, _ = np.linalg.svd(flat.T, full_matrices=False)
    matrix = (u * (np.sqrt(len(data)) / (s + 1e-3))) @ u.T
    np.testing.assert_allclose(generator.zca_whitening_matrix, matrix, rtol=1e-3, atol=1e-3)
    x, _ = all_batches(generator.flow(data, Y, batch_size=12, shuffle=False))
    np.testing.assert_allclose(x.reshape(12, -1), flat @ matrix, rtol=1e-3, atol=1e-3)


def test_validation_split_subsets_follow_keras2():
    generator = ImageDataGenerator(validation_split=0.25)
    labels = np.tile([0, 1], 6)
    val_x, val_y = all_batches(generator.flow(X, labels, batch_size=4, shuffle=False,
                                              subset="validation"))
    train_x, _ = all_batches(generator.flow(X, labels, batch_size=4, shuffle=False,
                                            subset="training"))
    np.testing.assert_array_equal(val_x, X[:3])
    np.testing.assert_array_equal(train_x, X[3:])
    with pytest.raises(ValueError, match="different number of classes"):
        generator.flow(X, np.arange(12) // 10, subset="training")


def test_a_seeded_iterator_repeats_and_batches_do_not_depend_on_fetch_order():
    generator = ImageDataGenerator(rotation_range=30, zoom_range=0.2, shear_range=10,
                                   horizontal_flip=True, width_shift_range=0.1)
    first = generator.flow(X, Y, batch_size=4, seed=7)
    second = generator.flow(X, Y, batch_size=4, seed=7)
    backwards = [second[i] for i in reversed(range(3))][::-1]
    for i in range(3):
        np.testing.assert_array_equal(first[i][0], backwards[i][0])
        np.testing.assert_array_equal(first[i][1], backwards[i][1])
    other = generator.flow(X, Y, batch_size=4, seed=8)
    assert not np.array_equal(first[0][0], other[0][0])
    before = first[0][0].copy()
    first.on_epoch_end()
    assert not np.array_equal(first[0][0], before)  # a new epoch reshuffles and redraws


def test_channels_first_gives_the_transposed_channels_last_result():
    settings = dict(rotation_range=20, width_shift_range=0.2, horizontal_flip=True,
                    channel_shift_range=10.0, rescale=0.1)
    last = ImageDataGenerator(data_format="channels_last", **settings)
    first = ImageDataGenerator(data_format="channels_first", **settings)
    a, _ = all_batches(last.flow(X, Y, batch_size=6, shuffle=False, seed=4))
    b, _ = all_batches(first.flow(X.transpose(0, 3, 1, 2), Y, batch_size=6, shuffle=False,
                                  seed=4))
    np.testing.assert_allclose(b.transpose(0, 2, 3, 1), a, rtol=1e-5, atol=1e-4)


def test_extra_inputs_and_sample_weights_pass_through():
    extra = np.arange(12.0)[:, None]
    x, y, w = ImageDataGenerator().flow((X, extra), Y, sample_weight=Y * 2, batch_size=5,
                                        shuffle=False)[1]
    np.testing.assert_array_equal(x[0], X[5:10])
    np.testing.assert_array_equal(x[1], extra[5:10])
    np.testing.assert_array_equal(w, Y[5:10] * 2)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="fill_mode must be one of"):
        ImageDataGenerator(fill_mode="mirror")
    with pytest.raises(ValueError, match="zoom_range must be a float or two floats"):
        ImageDataGenerator(zoom_range=(1, 2, 3))
    with pytest.raises(ValueError, match="rank 4"):
        ImageDataGenerator().flow(X[0], Y[:6])
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        ImageDataGenerator().flow(X, Y, batch_size=0)


def test_keras2_single_image_methods():
    generator = ImageDataGenerator(rotation_range=30, channel_shift_range=5.0,
                                   horizontal_flip=True)
    params = generator.get_random_transform(X[0].shape, seed=3)
    assert set(params) == {"theta", "tx", "ty", "shear", "zx", "zy", "flip_horizontal",
                           "flip_vertical", "channel_shift_intensity", "brightness"}
    assert -30 <= params["theta"] <= 30 and params["brightness"] is None
    np.testing.assert_array_equal(generator.apply_transform(X[0], {"flip_horizontal": True}),
                                  X[0][:, ::-1])
    np.testing.assert_array_equal(generator.random_transform(X[0], seed=3),
                                  generator.apply_transform(X[0], params))
