"""keras.utils.image_dataset_from_directory: batches of images from class subfolders.

Keras 3 returns a tf.data.Dataset (or a grain dataset); kiln has no TensorFlow, so the result
is a PyDataset that fit, evaluate and predict read the same way: batches of float32 images in
[0, 255] and labels as Keras makes them, with Keras's `class_names` and `file_paths`.

- Files, classes, the seeded shuffle and the validation split are Keras's own
  (`dataset_index.py`): the same folder and seed give the same `file_paths` in the same order.
- Images are decoded by Pillow and resized as Keras's Pillow path (`format="grain"`) does:
  `keras.ops.image.resize` without antialiasing, half-pixel centres (`kiln/data/image_resize.py`:
  each axis's taps computed once per size, applied by a numba kernel from Pillow's uint8
  pixels into the batch). Decoding and resizing run in fit's worker threads (Pillow and the
  kernel release the GIL).
- A training set (`shuffle=True`) draws its batches from a new seeded permutation of its files
  every epoch, as Keras's reshuffling tf.data buffer mixes them (TensorFlow's buffer order
  itself cannot be reproduced without TensorFlow); a validation set keeps `file_paths`' order.
- Only files ending in .bmp .gif .jpeg .jpg .png (any case) are listed; one of them that Pillow
  cannot decode stops the batch that holds it with an error naming the file, as Keras's
  decoder does.
"""

import numpy as np

from ...data.image_resize import INTERPOLATIONS, resize_images
from . import dataset_index, image_utils
from .py_dataset import PyDataset

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
WHERE = "image_dataset_from_directory"
_CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}
# Keras accepts these with TensorFlow only (its JAX resize has no such kernels).
_TENSORFLOW_ONLY = ("area", "gaussian", "mitchellcubic")


class ImageFolderDataset(PyDataset):
    """Batches (images, labels), or images alone, of the given files; built by
    image_dataset_from_directory. `len()` is the number of batches (of files when
    batch_size is None)."""

    def __init__(self, paths, labels, label_mode, class_names, image_size, color_mode,
                 batch_size, shuffle, seed, interpolation, crop_to_aspect_ratio,
                 pad_to_aspect_ratio, data_format, workers=2):
        super().__init__(workers=workers)
        self.file_paths = list(paths)
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int64)
        self.label_mode, self.class_names = label_mode, class_names
        self.image_size, self.color_mode = tuple(image_size), color_mode
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio
        self.pad_to_aspect_ratio = pad_to_aspect_ratio
        self.data_format = data_format
        self.epoch = 0
        self._set_order()

    def _set_order(self):
        count = len(self.file_paths)
        self.order = (np.random.default_rng([self.seed, self.epoch]).permutation(count)
                      if self.shuffle else np.arange(count))

    def __len__(self):
        size = self.batch_size or 1
        return -(-len(self.file_paths) // size)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"{WHERE}: batch index {index} out of range for {len(self)} "
                             "batches")
        size = self.batch_size or 1
        picked = self.order[index * size:(index + 1) * size]
        images = self.load_images([self.file_paths[i] for i in picked])
        if self.batch_size is None:
            images = images[0]
        if self.label_mode is None:
            return images
        labels = self.encode_labels(self.labels[picked])
        return images, (labels[0] if self.batch_size is None else labels)

    def load_images(self, paths):
        """The files decoded and resized into one float32 array (batch, height, width,
        channels), or channels first: each image goes straight from Pillow's pixels into
        its slot of the batch through the resize kernel (no float copy, no stacking)."""
        height, width = self.image_size
        batch = np.empty((len(paths), height, width, _CHANNELS[self.color_mode]), np.float32)
        for i, path in enumerate(paths):
            resize_images(self.decode(path)[None], self.image_size, self.interpolation,
                          self.crop_to_aspect_ratio, self.pad_to_aspect_ratio,
                          out=batch[i:i + 1])
        if self.data_format == "channels_first":
            batch = np.ascontiguousarray(batch.transpose(0, 3, 1, 2))
        return batch

    def decode(self, path):
        """One file as a (height, width, channels) array in `color_mode`, in Pillow's dtype
        (uint8; 16 / 32-bit gray stay integers)."""
        try:
            image = image_utils.open_image(path, WHERE)
            image = image_utils.convert_mode(image, self.color_mode, WHERE)
            pixels = np.asarray(image)
        except (OSError, ValueError, SyntaxError) as error:
            raise ValueError(f"{WHERE}: cannot decode image file {path!r} "
                             f"({type(error).__name__}: {error})") from error
        return pixels[:, :, None] if pixels.ndim == 2 else pixels

    def encode_labels(self, labels):
        if self.label_mode == "int":
            return labels.astype(np.int32)
        if self.label_mode == "binary":
            return labels.astype(np.float32).reshape(-1, 1)
        # one-hot as tf.one_hot: a label outside [0, num_classes) is a row of zeros
        return (labels[:, None] == np.arange(len(self.class_names))).astype(np.float32)

    def on_epoch_end(self):
        self.epoch += 1
        self._set_order()


def _check_arguments(labels, label_mode, class_names, color_mode, batch_size, image_size,
                     interpolation, crop_to_aspect_ratio, pad_to_aspect_ratio):
    if not (isinstance(labels, str) and labels == "inferred") and labels is not None:
        if not isinstance(labels, (list, tuple)):
            raise ValueError(f"{WHERE}: argument labels must be 'inferred', None or a list / "
                             "tuple of integer labels, one per image file, got "
                             f"{type(labels).__name__}")
        if class_names:
            raise ValueError(f"{WHERE}: argument class_names can only be given with "
                             f"labels='inferred', got class_names={class_names}")
    elif isinstance(labels, str) and labels != "inferred":
        raise ValueError(f"{WHERE}: argument labels must be 'inferred', None or a list of "
                         f"integer labels, got {labels!r}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f"{WHERE}: argument label_mode must be 'int', 'categorical', "
                         f"'binary' or None, got {label_mode!r}")
    if color_mode not in _CHANNELS:
        raise ValueError(f"{WHERE}: argument color_mode must be 'rgb', 'rgba' or "
                         f"'grayscale', got {color_mode!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
            batch_size, (int, np.integer)) or batch_size <= 0):
        raise ValueError(f"{WHERE}: argument batch_size must be a positive int or None, got "
                         f"{batch_size!r}")
    if isinstance(image_size, (int, np.integer)) and not isinstance(image_size, bool):
        image_size = (image_size, image_size)
    if not isinstance(image_size, (list, tuple)) or len(image_size) != 2 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
            for v in image_size):
        raise ValueError(f"{WHERE}: argument image_size must be (height, width), two positive "
                         f"ints, got {image_size!r}")
    interpolation = str(interpolation).lower()
    if interpolation in _TENSORFLOW_ONLY:
        raise ValueError(f"{WHERE}: interpolation={interpolation!r} needs TensorFlow in Keras "
                         f"too (keras.ops.image.resize has no such kernel); kiln supports "
                         f"{INTERPOLATIONS}")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{WHERE}: argument interpolation must be one of {INTERPOLATIONS}, "
                         f"got {interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError(f"{WHERE}: only one of crop_to_aspect_ratio and pad_to_aspect_ratio "
                         "can be True")
    return tuple(int(v) for v in image_size), interpolation


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, format="tf",
                                 verbose=True):
    """A dataset of images (and labels) from the image files of `directory`, as Keras 3's.

    Args:
        directory: with labels='inferred', one subfolder of images per class (nested folders
            count; files at the top are ignored); otherwise every image below it.
        labels: 'inferred' (from the subfolders), None (images only), or a list / tuple of
            integer labels, one per image file in sorted path order.
        label_mode: 'int' (int32), 'categorical' (one-hot float32), 'binary' (float32 of
            shape (batch, 1), two classes) or None (images only).
        class_names: with labels='inferred', the subfolders to use, in label order.
        color_mode: 'grayscale', 'rgb' or 'rgba' (1, 3 or 4 channels).
        batch_size: images per batch, or None for single images.
        image_size: (height, width) (or one int) every image is resized to.
        shuffle, seed: shuffle the files (with numpy's RandomState(seed), as Keras) and
            reshuffle a training set every epoch; without a seed one is drawn.
        validation_split, subset: hold out the last int(validation_split * n) files;
            subset 'training', 'validation' or 'both' (a (training, validation) pair).
            A seed is required when shuffling.
        interpolation: 'bilinear', 'nearest', 'bicubic', 'lanczos3' or 'lanczos5'
            (keras.ops.image.resize, no antialiasing).
        follow_links: walk into symlinked folders.
        crop_to_aspect_ratio / pad_to_aspect_ratio: keep the aspect ratio by taking the
            largest centred crop / padding with zeros, before resizing.
        data_format: 'channels_last' or 'channels_first'; None: the configured one.
        format: Keras's choice of tf.data ('tf') or grain ('grain') dataset; either gives
            the same PyDataset here.
        verbose: print how many files and classes were found.

    Returns:
        An `ImageFolderDataset` (a PyDataset) with `class_names` and `file_paths`, or a
        (training, validation) pair for subset='both'.
    """
    image_size, interpolation = _check_arguments(
        labels, label_mode, class_names, color_mode, batch_size, image_size, interpolation,
        crop_to_aspect_ratio, pad_to_aspect_ratio)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    if format not in ("tf", "grain"):
        raise ValueError(f"{WHERE}: argument format must be 'tf' or 'grain', got {format!r}")
    dataset_index.check_validation_split_arg(validation_split, subset, shuffle, seed, WHERE)
    data_format = image_utils._data_format(WHERE, data_format)
    image_utils.pil_image()  # fail now, not in a worker thread, if Pillow is missing
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labels, class_names = dataset_index.index_directory(
        directory, labels, ALLOWLIST_FORMATS, class_names=class_names, shuffle=shuffle,
        seed=seed, follow_links=follow_links, verbose=verbose, where=WHERE)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f"{WHERE}: label_mode='binary' needs exactly 2 classes, got "
                         f"class_names={class_names}")

    def dataset(part, reshuffle):
        part_paths, part_labels = dataset_index.training_or_validation_split(
            paths, labels, validation_split, part)
        if not part_paths:
            which = f"{part} " if part else ""
            raise ValueError(f"{WHERE}: no {which}images found in directory "
                             f"{str(directory)!r}; allowed formats: {ALLOWLIST_FORMATS}")
        return ImageFolderDataset(part_paths, part_labels, label_mode, class_names, image_size,
                                  color_mode, batch_size, reshuffle, seed, interpolation,
                                  crop_to_aspect_ratio, pad_to_aspect_ratio, data_format)

    if subset == "both":
        return dataset("training", shuffle), dataset("validation", False)
    return dataset(subset, shuffle)
