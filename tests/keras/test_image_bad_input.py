"""Bad input on the image path (augmentation layers, image files, keras.applications weights
files): a clear error naming the layer, function or model, the argument and what was expected.
The augmentation layers' other bad arguments are in
tests/keras/layers/test_image_preprocessing_against_keras.py, image_dataset_from_directory's in
tests/keras/utils/test_image_dataset_against_keras.py and a weights file of another
architecture in tests/keras/applications/test_applications_weights_and_utils.py."""

import numpy as np
import pytest

from kiln import keras as kk

PIL = pytest.importorskip("PIL.Image")
L = kk.layers

BAD_LAYERS = [
    (lambda: L.RandomRotation((0.2, 1.2)), "RandomRotation", "factor", "[-1, 1]"),
    (lambda: L.RandomBrightness(1.5), "RandomBrightness", "factor", "[-1, 1]"),
    (lambda: L.RandomErasing(factor=2.0), "RandomErasing", "factor", "[0, 1]"),
    (lambda: L.RandomGrayscale(-0.1), "RandomGrayscale", "factor", "[0, 1]"),
    (lambda: L.RandomContrast(-0.1), "RandomContrast", "factor", "[0, 1]"),
    (lambda: L.RandomZoom(0.1, interpolation="cubic"), "RandomZoom", "interpolation",
     "'nearest', 'bilinear'"),
    (lambda: L.RandomZoom(0.1, fill_mode="edge"), "RandomZoom", "fill_mode", "'reflect'"),
    (lambda: L.RandomTranslation(0.1, 0.1, interpolation="area"), "RandomTranslation",
     "interpolation", "'nearest', 'bilinear'"),
    (lambda: L.RandomShear(0.1, interpolation="lanczos"), "RandomShear", "interpolation",
     "'nearest', 'bilinear'"),
    (lambda: L.Resizing(4, 4, interpolation="Bilinear"), "Resizing", "interpolation",
     "'bilinear', 'nearest', 'bicubic'"),
]


@pytest.mark.parametrize("index", range(len(BAD_LAYERS)))
def test_augmentation_arguments_out_of_range(index):
    make, layer, argument, expected = BAD_LAYERS[index]
    with pytest.raises(ValueError) as error:
        make()
    message = str(error.value)
    assert layer in message and f"argument {argument}" in message and expected in message


@pytest.fixture
def mixed_sizes(tmp_path):
    """Two classes of JPEGs of three sizes."""
    rng = np.random.default_rng(0)
    for name in ("cats", "dogs"):
        (tmp_path / name).mkdir()
        for i, (height, width) in enumerate([(12, 10), (9, 14), (16, 16)]):
            pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
            PIL.fromarray(pixels).save(tmp_path / name / f"{i}.jpg")
    return tmp_path


def test_images_of_mixed_sizes_without_image_size(mixed_sizes):
    with pytest.raises(ValueError, match=r"image_dataset_from_directory: argument image_size "
                                         r"must be \(height, width\).*got None"):
        kk.utils.image_dataset_from_directory(str(mixed_sizes), image_size=None,
                                              verbose=False)
    # with one (Keras's default is 256x256) every image is resized to it
    dataset = kk.utils.image_dataset_from_directory(str(mixed_sizes), image_size=(8, 8),
                                                    batch_size=6, verbose=False)
    x, y = dataset[0]
    assert x.shape == (6, 8, 8, 3) and sorted(y.tolist()) == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("target_size", [(8,), (8, 0), 8, (8.5, 8), (True, 8)])
def test_load_img_bad_target_size(mixed_sizes, target_size):
    with pytest.raises(ValueError, match=r"load_img: argument target_size must be None or "
                                         r"\(height, width\)"):
        kk.utils.load_img(str(mixed_sizes / "cats" / "0.jpg"), target_size=target_size)


def test_load_img_bad_interpolation(mixed_sizes):
    with pytest.raises(ValueError, match="load_img: argument interpolation must be one of "
                                         "nearest, bilinear"):
        kk.utils.load_img(str(mixed_sizes / "cats" / "0.jpg"), target_size=(4, 4),
                          interpolation="cubic")


@pytest.mark.parametrize("file_name", ["junk.h5", "junk.weights.h5"])
def test_application_weights_file_that_is_no_weights_file(tmp_path, file_name):
    """weights=<a file that is not HDF5>: OSError as Keras's (h5py's), naming the model, the
    argument and the file; not 'does not fit this architecture'."""
    path = tmp_path / file_name
    path.write_text("not an HDF5 file")
    with pytest.raises(OSError) as error:
        kk.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, include_top=False,
                                    weights=str(path))
    message = str(error.value)
    assert message.startswith("mobilenetv2_0.35_32: argument weights: ")
    assert str(path) in message and "cannot be read as a weights file" in message
    assert "does not fit" not in message


def test_legacy_load_weights_of_a_file_that_is_no_hdf5(tmp_path):
    path = tmp_path / "junk.h5"
    path.write_text("not an HDF5 file")
    model = kk.Sequential([kk.Input((3,)), L.Dense(2)])
    with pytest.raises(OSError, match="load_weights: .*junk.h5 is not a readable HDF5 file"):
        model.load_weights(str(path))
