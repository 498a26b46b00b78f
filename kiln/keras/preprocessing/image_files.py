"""Image files <-> arrays through Pillow, an optional dependency (`pip install kiln[image]`).

Keras 2's load_img / img_to_array / array_to_img / save_img (Keras 3's, from
`keras.utils.image_utils`), and the folder walk of flow_from_directory: classes are the sorted
subfolder names, files are taken in sorted order, so the same folder always gives the same
samples.
"""

import os

import numpy as np

from ..utils import image_utils
from ..utils.image_utils import array_to_img, img_to_array, pil_image, save_img  # noqa: F401

IMAGE_FORMATS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".tif", ".tiff", ".gif")


def load_img(path, grayscale=False, color_mode="rgb", target_size=None,
             interpolation="nearest", keep_aspect_ratio=False):
    """Keras 3's load_img (`keras.utils.load_img`) with Keras 2's `grayscale=True` spelling
    of `color_mode='grayscale'`."""
    if grayscale:
        color_mode = "grayscale"
    return image_utils.load_img(path, color_mode=color_mode, target_size=target_size,
                                interpolation=interpolation,
                                keep_aspect_ratio=keep_aspect_ratio)


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
