"""keras.utils.load_img / img_to_array / array_to_img / save_img: image files <-> arrays
through Pillow, as Keras 3 (also its `keras.preprocessing.image.*` paths).

Pillow is the optional `image` extra (`pip install kiln[image]`); without it these functions
raise an ImportError that says so, and the rest of kiln works.
"""

import io
import pathlib
import warnings

import numpy as np

# Pillow's resampling filters by Keras's names (load_img's `interpolation`).
PIL_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def pil_image():
    """Pillow's Image module, or an ImportError that says how to get it."""
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError("reading and writing image files needs Pillow: pip install pillow "
                          "(or kiln[image])") from error
    return Image


def _data_format(where, data_format):
    from .. import backend
    if data_format is None:
        return backend.image_data_format()
    value = str(data_format).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"{where}: argument data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    return value


def _dtype(dtype):
    from .. import backend
    return backend.floatx() if dtype is None else dtype


def open_image(path, where="load_img"):
    """The Pillow image of a path (str, bytes, pathlib.Path) or an io.BytesIO, read whole."""
    Image = pil_image()
    if isinstance(path, io.BytesIO):
        return Image.open(path)
    if not isinstance(path, (pathlib.Path, bytes, str)):
        raise TypeError(f"{where}: argument path must be a path (str or pathlib.Path) or an "
                        f"io.BytesIO, got {type(path).__name__}")
    with open(path, "rb") as file:
        return Image.open(io.BytesIO(file.read()))


def convert_mode(image, color_mode, where="load_img"):
    """`image` in `color_mode`: 'grayscale' keeps 8/16/32-bit gray ('L', 'I;16', 'I') and turns
    the rest into 'L'; 'rgb' and 'rgba' convert to 'RGB' / 'RGBA'."""
    if color_mode == "grayscale":
        return image if image.mode in ("L", "I;16", "I") else image.convert("L")
    if color_mode == "rgba":
        return image if image.mode == "RGBA" else image.convert("RGBA")
    if color_mode == "rgb":
        return image if image.mode == "RGB" else image.convert("RGB")
    raise ValueError(f"{where}: argument color_mode must be 'grayscale', 'rgb' or 'rgba', got "
                     f"{color_mode!r}")


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """Loads an image file into a Pillow image, as `keras.utils.load_img`.

    Args:
        path: path of the file (str, bytes or pathlib.Path) or an io.BytesIO.
        color_mode: 'grayscale', 'rgb' or 'rgba'.
        target_size: None (the file's size) or (height, width).
        interpolation: Pillow's filter when resizing: 'nearest', 'bilinear', 'bicubic',
            'hamming', 'box' or 'lanczos'.
        keep_aspect_ratio: resize the largest centred crop of the target's aspect ratio.

    Returns:
        A PIL Image.
    """
    Image = pil_image()
    image = convert_mode(open_image(path), color_mode)
    if target_size is None:
        return image
    if not isinstance(target_size, (tuple, list)) or len(target_size) != 2 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
            for v in target_size):
        raise ValueError(f"load_img: argument target_size must be None or (height, width), "
                         f"two positive ints, got {target_size!r}")
    size = (int(target_size[1]), int(target_size[0]))
    if image.size == size:
        return image
    if interpolation not in PIL_INTERPOLATIONS:
        raise ValueError(f"load_img: argument interpolation must be one of "
                         f"{', '.join(PIL_INTERPOLATIONS)}, got {interpolation!r}")
    resample = getattr(Image.Resampling, interpolation.upper())
    if not keep_aspect_ratio:
        return image.resize(size, resample)
    width, height = image.size
    crop_height = min(height, (width * size[1]) // size[0])
    crop_width = min(width, (height * size[0]) // size[1])
    top, left = (height - crop_height) // 2, (width - crop_width) // 2
    return image.resize(size, resample, box=[left, top, left + crop_width, top + crop_height])


def img_to_array(img, data_format=None, dtype=None):
    """A Pillow image as a 3D array (height, width, channels) or (channels, height, width);
    grayscale gets a channel axis. `data_format` None: keras.config.image_data_format();
    `dtype` None: keras.config.floatx()."""
    data_format = _data_format("img_to_array", data_format)
    array = np.asarray(img, dtype=_dtype(dtype))
    if array.ndim == 2:
        array = array[None] if data_format == "channels_first" else array[:, :, None]
    elif array.ndim == 3:
        if data_format == "channels_first":
            array = array.transpose(2, 0, 1)
    else:
        raise ValueError(f"img_to_array: unsupported image shape {array.shape}; expected "
                         "(height, width) or (height, width, channels)")
    return array


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A 3D array with 1, 3 or 4 channels as a Pillow image ('L' or 'I', 'RGB', 'RGBA');
    `scale` first maps the array's minimum..maximum onto 0..255."""
    Image = pil_image()
    data_format = _data_format("array_to_img", data_format)
    x = np.array(x, dtype=_dtype(dtype))
    if x.ndim != 3:
        raise ValueError(f"array_to_img: argument x must have rank 3 (one image), got shape "
                         f"{x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    channels = x.shape[2]
    if channels == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"array_to_img: argument x must have 1, 3 or 4 channels, got {channels}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Saves a 3D array as an image file; the format comes from `file_format` or the path's
    extension ('jpg' is 'jpeg'; RGBA is converted to RGB for JPEG, with a warning).
    `kwargs` go to Pillow's `Image.save`."""
    data_format = _data_format("save_img", data_format)
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    image = array_to_img(x, data_format=data_format, scale=scale)
    if image.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.",
                      stacklevel=2)
        image = image.convert("RGB")
    image.save(path, format=file_format, **kwargs)


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last"):
    """Resizes an image (height, width, channels) or a batch of them to `size` without
    distorting them, as `keras.preprocessing.image.smart_resize`: the largest centred crop of
    the target's aspect ratio, resized with keras.ops.image.resize's `interpolation`."""
    from ...data.image_resize import resize_images
    if len(size) != 2:
        raise ValueError(f"smart_resize: argument size must be (height, width), got {size!r}")
    x = np.asarray(x)
    if x.ndim not in (3, 4):
        raise ValueError(f"smart_resize: argument x must be an image (height, width, "
                         f"channels) or a batch of them, got shape {x.shape}")
    data_format = _data_format("smart_resize", data_format)
    images = x if x.ndim == 4 else x[None]
    if data_format == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    images = resize_images(images, size, interpolation, crop_to_aspect_ratio=True)
    if data_format == "channels_first":
        images = images.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(images if x.ndim == 4 else images[0])
