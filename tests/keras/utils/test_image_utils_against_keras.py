"""keras.utils.load_img / img_to_array / array_to_img / save_img against Keras 3's, on image
files written by the test; and the Keras 2 paths (keras.preprocessing.image.*)."""

import contextlib
import io
import os
import warnings

os.environ["KERAS_BACKEND"] = "jax"  # before anything imports Keras

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

PIL = pytest.importorskip("PIL.Image")
keras = pytest.importorskip("keras")


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    paths = {}
    for name, mode, channels in (("rgb.png", "RGB", 3), ("gray.png", "L", 1),
                                 ("rgba.png", "RGBA", 4), ("photo.jpg", "RGB", 3)):
        shape = (13, 9) if channels == 1 else (13, 9, channels)
        PIL.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(tmp_path / name)
        paths[name] = str(tmp_path / name)
    return paths


@pytest.mark.parametrize("color_mode", ["rgb", "grayscale", "rgba"])
@pytest.mark.parametrize("options", [
    dict(), dict(target_size=(6, 7)), dict(target_size=(6, 7), interpolation="bilinear"),
    dict(target_size=(5, 5), interpolation="lanczos", keep_aspect_ratio=True)])
def test_load_img_and_img_to_array_equal_keras(files, color_mode, options):
    for path in files.values():
        ours = kk.utils.load_img(path, color_mode=color_mode, **options)
        theirs = keras.utils.load_img(path, color_mode=color_mode, **options)
        assert (ours.mode, ours.size) == (theirs.mode, theirs.size)
        for data_format in ("channels_last", "channels_first"):
            array = kk.utils.img_to_array(ours, data_format=data_format)
            expected = keras.utils.img_to_array(theirs, data_format=data_format)
            assert array.dtype == expected.dtype == np.float32
            np.testing.assert_array_equal(array, expected)
    with open(files["rgb.png"], "rb") as file:
        from_bytes = kk.utils.load_img(io.BytesIO(file.read()))
    assert from_bytes.size == (9, 13)


@pytest.mark.parametrize("shape", [(5, 4, 3), (5, 4, 4), (5, 4, 1), (3, 5, 4)])
@pytest.mark.parametrize("scale", [True, False])
def test_array_to_img_and_save_img_equal_keras(tmp_path, shape, scale):
    x = np.random.default_rng(1).uniform(0, 300 if shape[-1] == 1 else 255, shape)
    data_format = "channels_first" if shape[0] == 3 else "channels_last"
    ours = kk.utils.array_to_img(x, data_format=data_format, scale=scale)
    theirs = keras.utils.array_to_img(x, data_format=data_format, scale=scale)
    assert ours.mode == theirs.mode
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    if ours.mode == "I":
        return  # 32-bit gray: Pillow writes neither PNG nor JPEG
    for suffix in (".png", ".jpg"):
        converts = ours.mode == "RGBA" and suffix == ".jpg"
        with pytest.warns(UserWarning, match="converting to RGB") if converts else \
                contextlib.nullcontext():
            kk.utils.save_img(str(tmp_path / f"ours{suffix}"), x, data_format=data_format,
                              scale=scale)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            keras.utils.save_img(str(tmp_path / f"theirs{suffix}"), x,
                                 data_format=data_format, scale=scale)
        assert (tmp_path / f"ours{suffix}").read_bytes() == \
            (tmp_path / f"theirs{suffix}").read_bytes()


def test_keras2_paths_and_grayscale_spelling(files):
    from kiln.keras.preprocessing import image
    gray = image.load_img(files["rgb.png"], grayscale=True)
    np.testing.assert_array_equal(np.asarray(gray), np.asarray(
        keras.utils.load_img(files["rgb.png"], color_mode="grayscale")))
    assert image.img_to_array is kk.utils.img_to_array
    assert image.array_to_img is kk.utils.array_to_img and image.save_img is kk.utils.save_img
    assert kk.preprocessing.image_dataset_from_directory is \
        kk.utils.image_dataset_from_directory


def test_bad_arguments_name_the_function_and_argument(files):
    with pytest.raises(ValueError, match="load_img: argument color_mode must be"):
        kk.utils.load_img(files["rgb.png"], color_mode="cmyk")
    with pytest.raises(ValueError, match="load_img: argument interpolation must be one of"):
        kk.utils.load_img(files["rgb.png"], target_size=(3, 3), interpolation="cubic")
    with pytest.raises(TypeError, match="load_img: argument path must be a path"):
        kk.utils.load_img(42)
    with pytest.raises(ValueError, match="img_to_array: argument data_format must be"):
        kk.utils.img_to_array(kk.utils.load_img(files["rgb.png"]), data_format="nhwc")
    with pytest.raises(ValueError, match="array_to_img: argument x must have rank 3"):
        kk.utils.array_to_img(np.zeros((2, 4, 4, 3)))
    with pytest.raises(ValueError, match="array_to_img: argument x must have 1, 3 or 4 "):
        kk.utils.array_to_img(np.zeros((4, 4, 2)))


@pytest.mark.parametrize("shape, data_format", [((13, 9, 3), "channels_last"),
                                                ((2, 3, 13, 9), "channels_first")])
def test_smart_resize_equals_keras(shape, data_format):
    from kiln.keras.preprocessing.image import smart_resize
    x = np.random.default_rng(2).uniform(0, 255, shape).astype(np.float32)
    for size, interpolation in (((5, 6), "bilinear"), ((20, 7), "bicubic")):
        ours = smart_resize(x, size, interpolation, data_format=data_format)
        theirs = keras.preprocessing.image.smart_resize(x, size, interpolation,
                                                        data_format=data_format)
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=3e-4)
