"""flow_from_directory and image_dataset_from_directory on PNG folders written by the test:
classes from subfolders, class / label modes, target size, color mode, splits."""

import numpy as np
import pytest

PIL = pytest.importorskip("PIL.Image")

from kiln.keras.preprocessing.image import ImageDataGenerator  # noqa: E402
from kiln.keras.utils import image_dataset_from_directory  # noqa: E402


@pytest.fixture
def folder(tmp_path):
    """cats/ (3 images) and dogs/ (2 images), 5x4 RGB PNGs whose pixels encode the file."""
    rng = np.random.default_rng(0)
    images = {}
    for name, count in (("cats", 3), ("dogs", 2)):
        (tmp_path / name).mkdir()
        for i in range(count):
            pixels = rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)
            path = tmp_path / name / f"img{i}.png"
            PIL.fromarray(pixels, "RGB").save(path)
            images[f"{name}/img{i}.png"] = pixels
    (tmp_path / "dogs" / "notes.txt").write_text("not an image")
    return tmp_path, images


def test_flow_from_directory_classes_labels_and_pixels(folder):
    root, images = folder
    iterator = ImageDataGenerator().flow_from_directory(root, target_size=(5, 4), batch_size=4,
                                                        shuffle=False)
    assert iterator.class_indices == {"cats": 0, "dogs": 1}
    assert iterator.filenames == sorted(images) and list(iterator.classes) == [0, 0, 0, 1, 1]
    x, y = iterator[0]
    assert x.shape == (4, 5, 4, 3) and x.dtype == np.float32
    for image, name in zip(x, sorted(images)):
        np.testing.assert_array_equal(image, images[name])
    np.testing.assert_array_equal(y, np.eye(2)[[0, 0, 0, 1]])
    x, y = iterator[1]
    assert x.shape == (1, 5, 4, 3)
    np.testing.assert_array_equal(y, [[0, 1]])


@pytest.mark.parametrize("class_mode, expected", [
    ("binary", [0, 0, 0, 1, 1]), ("sparse", [0, 0, 0, 1, 1]), (None, None)])
def test_class_modes(folder, class_mode, expected):
    root, _ = folder
    batch = ImageDataGenerator().flow_from_directory(
        root, target_size=(5, 4), class_mode=class_mode, batch_size=5, shuffle=False)[0]
    if expected is None:
        assert isinstance(batch, np.ndarray) and batch.shape == (5, 5, 4, 3)
    else:
        np.testing.assert_array_equal(batch[1], expected)
    x, y = ImageDataGenerator().flow_from_directory(
        root, target_size=(5, 4), class_mode="input", batch_size=5, shuffle=False)[0]
    np.testing.assert_array_equal(x, y)


def test_target_size_and_grayscale_use_pillow(folder):
    root, images = folder
    generator = ImageDataGenerator(rescale=1 / 255.0)
    x, _ = generator.flow_from_directory(root, target_size=(3, 2), color_mode="grayscale",
                                         batch_size=5, shuffle=False)[0]
    assert x.shape == (5, 3, 2, 1)
    expected = np.asarray(PIL.fromarray(images["cats/img0.png"]).convert("L").resize(
        (2, 3), PIL.Resampling.NEAREST), np.float32)
    np.testing.assert_allclose(x[0, :, :, 0], expected / 255.0, rtol=1e-6)
    first = ImageDataGenerator(data_format="channels_first").flow_from_directory(
        root, target_size=(5, 4), batch_size=5, shuffle=False)[0][0]
    assert first.shape == (5, 3, 5, 4)
    np.testing.assert_array_equal(first[0], images["cats/img0.png"].transpose(2, 0, 1))


def test_validation_split_takes_the_first_files_of_each_class(folder):
    root, _ = folder
    generator = ImageDataGenerator(validation_split=0.5)
    validation = generator.flow_from_directory(root, target_size=(5, 4), subset="validation")
    training = generator.flow_from_directory(root, target_size=(5, 4), subset="training")
    assert validation.filenames == ["cats/img0.png", "dogs/img0.png"]
    assert training.filenames == ["cats/img1.png", "cats/img2.png", "dogs/img1.png"]


def test_image_dataset_from_directory_as_keras3(folder):
    root, images = folder
    dataset = image_dataset_from_directory(root, image_size=(5, 4), batch_size=2,
                                           shuffle=False)
    assert dataset.class_names == ["cats", "dogs"] and len(dataset) == 3
    x, y = dataset[0]
    assert x.dtype == np.float32 and y.dtype == np.int32 and list(y) == [0, 0]
    np.testing.assert_array_equal(x[1], images["cats/img1.png"])
    _, y = image_dataset_from_directory(root, image_size=(5, 4), batch_size=5,
                                        label_mode="categorical", shuffle=False)[0]
    np.testing.assert_array_equal(y, np.eye(2)[[0, 0, 0, 1, 1]])
    _, y = image_dataset_from_directory(root, image_size=(5, 4), batch_size=5,
                                        label_mode="binary", shuffle=False)[0]
    assert y.shape == (5, 1)


def test_image_dataset_split_shuffles_once_with_the_seed_then_splits(folder):
    root, _ = folder
    training, validation = image_dataset_from_directory(
        root, image_size=(5, 4), batch_size=8, validation_split=0.4, subset="both", seed=3)
    assert len(training.file_paths) == 3 and len(validation.file_paths) == 2
    assert not set(training.file_paths) & set(validation.file_paths)
    again = image_dataset_from_directory(root, image_size=(5, 4), batch_size=8,
                                         validation_split=0.4, subset="training", seed=3)
    assert again.file_paths == training.file_paths
    with pytest.raises(ValueError, match="label_mode must be"):
        image_dataset_from_directory(root, label_mode="sparse")


def test_file_order_and_split_equal_keras3s(folder):
    import os
    os.environ.setdefault("KERAS_BACKEND", "jax")
    from keras.src.utils import dataset_utils
    root, _ = folder
    paths, labels, _ = dataset_utils.index_directory(str(root), "inferred",
                                                     formats=(".png",), shuffle=True, seed=11,
                                                     verbose=False)
    keras_training, _ = dataset_utils.get_training_or_validation_split(
        paths, labels, 0.4, "training")
    ours = image_dataset_from_directory(str(root), image_size=(5, 4), validation_split=0.4,
                                        subset="training", seed=11, verbose=False)
    assert ours.file_paths == list(keras_training)
