"""Image files <-> arrays through Pillow, an optional dependency (`pip install kiln[image]`).

Keras 2's load_img / img_to_array / array_to_img / save_img, and the folder walk that
flow_from_directory and image_dataset_from_directory share: classes are the sorted subfolder
names, files are taken in sorted order, so the same folder always gives the same samples.
"""

import io
import os
from pathlib import Path

import numpy as np

IMAGE_FORMATS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".tif", ".tiff", ".gif")


def pil_image():
    """Pillow's Image module, or an ImportError that says how to get it."""
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError("reading and writing image files needs Pillow: pip install pillow "
                          "(or kiln[image])") from error
    return Image


def _resample(name):
    Image = pil_image()
    methods = {"nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR,
               "bicubic": Image.Resampling.BICUBIC, "hamming": Image.Resampling.HAMMING,
               "box": Image.Resampling.BOX, "lanczos": Image.Resampling.LANCZOS}
    if name not in methods:
        raise ValueError(f"load_img: argument interpolation must be one of {sorted(methods)}, "
                         f"got {name!r}")
    return methods[name]


def load_img(path, grayscale=False, color_mode="rgb", target_size=None,
             interpolation="nearest", keep_aspect_ratio=False):
    """A Pillow image of the file at `path` in `color_mode` ('grayscale', 'rgb', 'rgba'),
    resized to `target_size` (height, width) if given, as Keras 2's load_img."""
    Image = pil_image()
    if grayscale:
        color_mode = "grayscale"
    if isinstance(path, io.BytesIO):
        image = Image.open(path)
    else:
        with open(Path(path), "rb") as file:
            image = Image.open(io.BytesIO(file.read()))
    modes = {"grayscale": ("L", ("L", "I;16", "I")), "rgb": ("RGB", ("RGB",)),
             "rgba": ("RGBA", ("RGBA",))}
    if color_mode not in modes:
        raise ValueError(f"load_img: argument color_mode must be 'grayscale', 'rgb' or 'rgba', "
                         f"got {color_mode!r}")
    mode, accepted = modes[color_mode]
    if image.mode not in accepted:
        image = image.convert(mode)
    if target_size is not None:
        size = (int(target_size[1]), int(target_size[0]))
        if image.size != size:
            box = None
            if keep_aspect_ratio:
                width, height = image.size
                crop_height = min(height, (width * size[1]) // size[0])
                crop_width = min(width, (height * size[0]) // size[1])
                top, left = (height - crop_height) // 2, (width - crop_width) // 2
                box = (left, top, left + crop_width, top + crop_height)
            image = image.resize(size, _resample(interpolation), box=box)
    return image


def img_to_array(img, data_format="channels_last", dtype="float32"):
    """(H, W, C) (or (C, H, W)) array of a Pillow image; grayscale gets a channel axis."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"img_to_array: argument data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    array = np.asarray(img, dtype=dtype)
    if array.ndim == 2:
        array = array[:, :, None]
    elif array.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {array.shape}")
    return array.transpose(2, 0, 1) if data_format == "channels_first" else array


def array_to_img(x, data_format="channels_last", scale=True, dtype="float32"):
    """A Pillow image of an (H, W, C) array with 1, 3 or 4 channels; `scale` maps the
    array's range onto 0..255 first."""
    Image = pil_image()
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 3:
        raise ValueError(f"array_to_img: argument x must have rank 3 (one image), got shape "
                         f"{x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    channels = x.shape[2]
    if channels == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"array_to_img: images have 1, 3 or 4 channels, got {channels}")


def save_img(path, x, data_format="channels_last", file_format=None, scale=True, **kwargs):
    image = array_to_img(x, data_format=data_format, scale=scale)
    if image.mode == "RGBA" and file_format in ("jpg", "jpeg"):
        image = image.convert("RGB")
    image.save(path, format=file_format, **kwargs)


def list_class_files(directory, classes=None, formats=IMAGE_FORMATS, follow_links=False):
    """(class names, file paths, class index of each file): classes are the sorted subfolders
    (or `classes`), files are walked in sorted order below each."""
    if not os.path.isdir(directory):
        raise ValueError(f"argument directory {str(directory)!r} is not a folder")
    if not classes:
        classes = sorted(entry for entry in os.listdir(directory)
                         if os.path.isdir(os.path.join(directory, entry)))
    paths, labels = [], []
    for label, name in enumerate(classes):
        folder = os.path.join(directory, name)
        for root, _, files in sorted(os.walk(folder, followlinks=follow_links)):
            for file in sorted(files):
                if file.lower().endswith(formats):
                    paths.append(os.path.join(root, file))
                    labels.append(label)
    return list(classes), paths, np.array(labels, dtype=np.int64)
