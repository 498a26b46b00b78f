"""image_dataset_from_directory against Keras 3 on folders of PNG / JPEG files the tests
write: the file index, seeded shuffle, split and class names against Keras's own dataset_utils
functions; the pixels against Keras's Pillow loader (`_load_image_grain`: Pillow, then
keras.ops.image.resize); labels, a corrupt file, nested folders, and training with fit."""

import os

os.environ["KERAS_BACKEND"] = "jax"  # before anything imports Keras

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

PIL = pytest.importorskip("PIL.Image")
keras = pytest.importorskip("keras")
from keras.src.utils import dataset_utils, image_dataset_utils  # noqa: E402

FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _write(path, pixels, file_format=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = {2: "L", 3: "RGB"}[pixels.ndim] if pixels.ndim == 2 or pixels.shape[2] == 3 \
        else "RGBA"
    PIL.fromarray(pixels, mode).save(path, format=file_format)


@pytest.fixture
def folder(tmp_path):
    """birds/ cats/ dogs/ with images of several sizes and formats, dogs/ with a nested
    folder; files Keras skips: a .txt, a hidden folder, a file at the top; a grayscale PNG,
    an RGBA PNG and a palette GIF (converted by color_mode)."""
    rng = np.random.default_rng(0)

    def pixels(height, width, channels=3):
        shape = (height, width) if channels == 1 else (height, width, channels)
        return rng.integers(0, 256, shape, dtype=np.uint8)

    for i in range(4):
        _write(tmp_path / "cats" / f"cat{i}.png", pixels(12, 10))
    _write(tmp_path / "cats" / "gray.png", pixels(12, 10, 1))
    _write(tmp_path / "birds" / "b0.jpg", pixels(9, 14))
    _write(tmp_path / "birds" / "B1.JPG", pixels(16, 16), "JPEG")
    _write(tmp_path / "birds" / "alpha.png", pixels(7, 11, 4))
    PIL.fromarray(pixels(8, 9)).convert("P").save(tmp_path / "birds" / "palette.gif")
    for i in range(3):
        _write(tmp_path / "dogs" / f"dog{i}.png", pixels(10, 12))
    _write(tmp_path / "dogs" / "puppies" / "pup.png", pixels(20, 8))
    _write(tmp_path / "dogs" / "a_sub" / "deep" / "pup2.bmp", pixels(6, 6), "BMP")
    (tmp_path / "dogs" / "notes.txt").write_text("not an image")
    _write(tmp_path / ".hidden" / "x.png", pixels(4, 4))
    _write(tmp_path / "top.png", pixels(5, 5))
    return str(tmp_path)


def _keras_index(root, labels="inferred", class_names=None, shuffle=True, seed=5):
    return dataset_utils.index_directory(root, labels, formats=FORMATS,
                                         class_names=class_names, shuffle=shuffle, seed=seed,
                                         verbose=False)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("subset", [None, "training", "validation", "both"])
def test_file_paths_labels_and_class_names_equal_keras(folder, shuffle, subset):
    split = 0.3 if subset else None
    ours = kk.utils.image_dataset_from_directory(
        folder, image_size=(8, 8), shuffle=shuffle, seed=5, validation_split=split,
        subset=subset, verbose=False)
    paths, labels, names = _keras_index(folder, shuffle=shuffle)
    for part, dataset in zip(["training", "validation"] if subset == "both" else [subset],
                             ours if subset == "both" else [ours]):
        expected_paths, expected_labels = (paths, labels) if part is None else \
            dataset_utils.get_training_or_validation_split(paths, labels, split, part)
        assert dataset.file_paths == list(expected_paths)
        np.testing.assert_array_equal(dataset.labels, expected_labels)
        assert dataset.class_names == names == ["birds", "cats", "dogs"]
    assert len(paths) == 14  # .txt, hidden folder and top-level file skipped


def test_class_names_subset_labels_list_and_no_labels_equal_keras(folder):
    ours = kk.utils.image_dataset_from_directory(folder, class_names=["dogs", "birds"],
                                                 image_size=4, seed=9, verbose=False)
    paths, labels, names = _keras_index(folder, class_names=["dogs", "birds"], seed=9)
    assert (ours.file_paths, ours.class_names) == (paths, names)
    np.testing.assert_array_equal(ours.labels, labels)

    unlabeled = kk.utils.image_dataset_from_directory(folder, labels=None, image_size=4,
                                                      seed=9, verbose=False)
    paths, _, names = _keras_index(folder, labels=None, seed=9)
    assert unlabeled.file_paths == paths and unlabeled.class_names is names is None
    assert len(paths) == 16  # the top-level file and the hidden folder count here
    assert unlabeled[0].shape == (16, 4, 4, 3)  # images only

    given = [3, 0, 3, 1, 1, 0, 3, 3, 1, 0, 0, 1, 3, 3, 0, 1]
    listed = kk.utils.image_dataset_from_directory(folder, labels=given, image_size=4,
                                                   label_mode="categorical", seed=2,
                                                   verbose=False)
    paths, labels, names = _keras_index(folder, labels=list(given), seed=2)
    assert listed.file_paths == paths and listed.class_names == names == ["0", "1", "3"]
    np.testing.assert_array_equal(listed.labels, labels)
    _, onehot = listed[0]
    # tf.one_hot(3, 3) is all zeros: num_classes is the number of distinct labels, as Keras
    expected = np.array(labels)[listed.order][:, None] == np.arange(3)
    np.testing.assert_array_equal(onehot, expected)


@pytest.mark.parametrize("color_mode, channels, options", [
    ("rgb", 3, dict()),
    ("grayscale", 1, dict(interpolation="nearest", crop_to_aspect_ratio=True)),
    ("rgba", 4, dict(interpolation="bicubic", pad_to_aspect_ratio=True,
                     data_format="channels_first"))])
def test_pixels_equal_keras_pillow_loader(folder, color_mode, channels, options):
    dataset = kk.utils.image_dataset_from_directory(
        folder, image_size=(9, 7), color_mode=color_mode, batch_size=5, seed=1,
        verbose=False, **options)
    data_format = options.get("data_format", "channels_last")
    batches = [dataset[i] for i in range(len(dataset))]
    x, y = np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])
    assert x.dtype == np.float32 and y.dtype == np.int32 and len(x) == 14
    np.testing.assert_array_equal(y, dataset.labels[dataset.order])
    for image, index in zip(x, dataset.order):
        expected = image_dataset_utils._load_image_grain(
            dataset.file_paths[index], (9, 7), channels, options.get("interpolation",
                                                                     "bilinear"),
            data_format, options.get("crop_to_aspect_ratio", False),
            options.get("pad_to_aspect_ratio", False))
        assert image.shape == expected.shape
        np.testing.assert_allclose(image, np.asarray(expected), rtol=0, atol=3e-4)


@pytest.mark.parametrize("follow_links", [False, True])
def test_symlinked_folders_as_keras(folder, tmp_path_factory, follow_links):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    _write(elsewhere / "linked.png", np.zeros((4, 4, 3), np.uint8))
    os.symlink(elsewhere, os.path.join(folder, "cats", "link"))
    ours = kk.utils.image_dataset_from_directory(folder, image_size=4, seed=4,
                                                 follow_links=follow_links, verbose=False)
    paths, labels, _ = dataset_utils.index_directory(
        folder, "inferred", formats=FORMATS, seed=4, follow_links=follow_links, verbose=False)
    assert ours.file_paths == paths and len(paths) == 14 + follow_links
    np.testing.assert_array_equal(ours.labels, labels)


def test_label_modes_and_unbatched(folder):
    def first(**options):
        return kk.utils.image_dataset_from_directory(
            folder, image_size=(6, 5), batch_size=5, shuffle=False, verbose=False,
            **options)[0]
    _, y = first(label_mode="categorical")
    assert y.dtype == np.float32 and y.shape == (5, 3)
    np.testing.assert_array_equal(y, np.eye(3)[[0, 0, 0, 0, 1]])  # 4 birds, then cats
    _, y = first(class_names=["dogs", "cats"], label_mode="binary")
    assert y.dtype == np.float32 and y.shape == (5, 1)
    np.testing.assert_array_equal(y[:, 0], [0, 0, 0, 0, 0])
    x = first(label_mode=None, format="grain")
    assert isinstance(x, np.ndarray) and x.shape == (5, 6, 5, 3)
    single = kk.utils.image_dataset_from_directory(folder, image_size=(6, 5), batch_size=None,
                                                   shuffle=False, verbose=False)
    x, y = single[4]
    assert len(single) == 14 and x.shape == (6, 5, 3) and y == 1 and y.dtype == np.int32


def test_training_set_reshuffles_each_epoch_validation_keeps_its_order(folder):
    training, validation = kk.utils.image_dataset_from_directory(
        folder, image_size=4, batch_size=4, seed=3, validation_split=0.25, subset="both",
        verbose=False)
    first = training.order.copy()
    training.on_epoch_end()
    assert sorted(first) == sorted(training.order) and list(first) != list(training.order)
    validation.on_epoch_end()
    assert list(validation.order) == list(range(len(validation.file_paths)))


def test_fit_on_the_dataset_equals_fit_on_its_arrays(folder):
    def model():
        kk.utils.set_random_seed(0)
        net = kk.Sequential([kk.Input((8, 8, 3)), kk.layers.Rescaling(1 / 255),
                             kk.layers.Conv2D(4, 3, activation="relu"),
                             kk.layers.GlobalAveragePooling2D(),
                             kk.layers.Dense(3, activation="softmax")])
        net.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                    metrics=["accuracy"])
        return net
    training, validation = kk.utils.image_dataset_from_directory(
        folder, image_size=(8, 8), batch_size=4, shuffle=False, validation_split=0.25,
        subset="both", verbose=False)
    on_dataset = model()
    history = on_dataset.fit(training, validation_data=validation, epochs=3, shuffle=False,
                             verbose=0)
    batches = [training[i] for i in range(len(training))]
    x, y = np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])
    on_arrays = model()
    on_arrays.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    for ours, theirs in zip(on_dataset.get_weights(), on_arrays.get_weights()):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert len(history.history["val_loss"]) == 3
    assert on_dataset.predict(validation, verbose=0).shape == (3, 3)
    loss, _ = on_dataset.evaluate(validation, verbose=0)
    assert np.isfinite(loss)


def test_corrupt_image_file_raises_naming_the_file(tmp_path):
    for name in ("a", "b"):
        _write(tmp_path / name / "ok.png", np.zeros((4, 4, 3), np.uint8))
    (tmp_path / "b" / "broken.png").write_bytes(b"\x89PNG not really")
    (tmp_path / "b" / "readme.md").write_text("skipped: not an image extension")
    dataset = kk.utils.image_dataset_from_directory(str(tmp_path), image_size=4, batch_size=1,
                                                    shuffle=False, verbose=False)
    assert [os.path.basename(p) for p in dataset.file_paths] == ["ok.png", "broken.png",
                                                                  "ok.png"]
    dataset[0]
    with pytest.raises(ValueError, match="image_dataset_from_directory: cannot decode image "
                                         "file .*broken.png"):
        dataset[1]
    net = kk.Sequential([kk.Input((4, 4, 3)), kk.layers.Flatten(), kk.layers.Dense(2)])
    net.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="broken.png"):
        net.fit(dataset, epochs=1, verbose=0)


def test_prints_what_keras_prints(folder, capsys):
    kk.utils.image_dataset_from_directory(folder, image_size=4, seed=1, validation_split=0.2,
                                          subset="both")
    assert capsys.readouterr().out.splitlines() == [
        "Found 14 files belonging to 3 classes.", "Using 12 files for training.",
        "Using 2 files for validation."]
    kk.utils.image_dataset_from_directory(folder, labels=None, image_size=4)
    assert capsys.readouterr().out == "Found 16 files.\n"


@pytest.mark.parametrize("options, message", [
    (dict(labels="folders"), "argument labels must be 'inferred', None or a list"),
    (dict(labels=np.zeros(14)), "argument labels must be 'inferred', None or a list"),
    (dict(labels=[0] * 14, class_names=["cats"]), "class_names can only be given with"),
    (dict(labels=[0, 1]), "len\\(labels\\) is 2 while 16 files were found"),
    (dict(label_mode="sparse"), "argument label_mode must be 'int', 'categorical'"),
    (dict(label_mode="binary"), "label_mode='binary' needs exactly 2 classes"),
    (dict(class_names=["cats", "cows"]), "argument class_names must name subfolders"),
    (dict(color_mode="rgbx"), "argument color_mode must be 'rgb', 'rgba' or 'grayscale'"),
    (dict(batch_size=0), "argument batch_size must be a positive int or None"),
    (dict(image_size=(8, 8, 3)), "argument image_size must be \\(height, width\\)"),
    (dict(image_size=(8, 0)), "argument image_size must be \\(height, width\\)"),
    (dict(interpolation="cubic"), "argument interpolation must be one of"),
    (dict(interpolation="area"), "interpolation='area' needs TensorFlow in Keras too"),
    (dict(crop_to_aspect_ratio=True, pad_to_aspect_ratio=True),
     "only one of crop_to_aspect_ratio and pad_to_aspect_ratio"),
    (dict(validation_split=0.2), "arguments validation_split and subset go together"),
    (dict(subset="training"), "arguments validation_split and subset go together"),
    (dict(validation_split=1.5, subset="training", seed=1),
     "argument validation_split must be between 0 and 1"),
    (dict(validation_split=0.2, subset="train", seed=1), "argument subset must be"),
    (dict(validation_split=0.2, subset="training"), "argument seed is required"),
    (dict(data_format="channels_middle"), "argument data_format must be 'channels_last'"),
    (dict(format="torch"), "argument format must be 'tf' or 'grain'"),
])
def test_bad_arguments_are_refused_with_the_argument_named(folder, options, message):
    with pytest.raises(ValueError, match="image_dataset_from_directory: .*" + message):
        kk.utils.image_dataset_from_directory(folder, verbose=False, **options)


def test_missing_or_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="argument directory must be an existing folder"):
        kk.utils.image_dataset_from_directory(str(tmp_path / "nowhere"))
    (tmp_path / "empty_class").mkdir()
    with pytest.raises(ValueError, match="no images found in directory"):
        kk.utils.image_dataset_from_directory(str(tmp_path), verbose=False)


def test_16_bit_grayscale_keeps_its_values_as_keras(tmp_path):
    pixels = np.random.default_rng(3).integers(0, 65536, (7, 5), dtype=np.uint16)
    (tmp_path / "only").mkdir()
    PIL.fromarray(pixels).save(tmp_path / "only" / "deep.png")
    dataset = kk.utils.image_dataset_from_directory(str(tmp_path), color_mode="grayscale",
                                                    image_size=(4, 6), verbose=False)
    x, _ = dataset[0]
    expected = image_dataset_utils._load_image_grain(dataset.file_paths[0], (4, 6), 1,
                                                     "bilinear", "channels_last")
    assert x.max() > 255
    np.testing.assert_allclose(x[0], np.asarray(expected), rtol=1e-6, atol=0.05)
