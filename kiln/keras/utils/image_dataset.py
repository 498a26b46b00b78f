"""keras.utils.image_dataset_from_directory: batches of images from class subfolders.

Keras 3 returns a tf.data.Dataset; kiln has no TensorFlow, so the result is a PyDataset that
fit reads the same way (batches of float32 images in [0, 255] and labels as Keras makes
them), with Keras's `class_names` and `file_paths`. Files are indexed and shuffled once with
the seed before the validation split, as Keras does, and a training set is reshuffled every
epoch. Images are decoded and resized with Pillow in fit's worker threads; Pillow's resize
filters are not TensorFlow's, so resized pixels differ slightly from Keras-on-TensorFlow's.
"""

import numpy as np

from .py_dataset import PyDataset

FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_RESAMPLING = {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic",
               "area": "box", "lanczos3": "lanczos", "lanczos5": "lanczos"}


class ImageFolderDataset(PyDataset):
    """Batches (images, labels) of the given files; built by image_dataset_from_directory."""

    def __init__(self, paths, labels, label_mode, class_names, image_size, color_mode,
                 batch_size, shuffle, seed, interpolation, crop_to_aspect_ratio, data_format):
        super().__init__(workers=2)
        self.file_paths, self.labels, self.label_mode = list(paths), labels, label_mode
        self.class_names = class_names
        self.image_size, self.color_mode = tuple(image_size), color_mode
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.interpolation, self.crop = interpolation, crop_to_aspect_ratio
        self.data_format = data_format
        self.epoch = 0
        self._set_order()

    def _set_order(self):
        count = len(self.file_paths)
        self.order = (np.random.default_rng([self.seed, self.epoch]).permutation(count)
                      if self.shuffle else np.arange(count))

    def __len__(self):
        return -(-len(self.file_paths) // self.batch_size)

    def __getitem__(self, index):
        from ..preprocessing import image_files
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches")
        picked = self.order[index * self.batch_size:(index + 1) * self.batch_size]
        images = []
        for i in picked:
            image = image_files.load_img(self.file_paths[i], color_mode=self.color_mode,
                                         target_size=self.image_size,
                                         interpolation=_RESAMPLING[self.interpolation],
                                         keep_aspect_ratio=self.crop)
            images.append(image_files.img_to_array(image, self.data_format))
            image.close()
        images = np.stack(images)
        if self.label_mode is None:
            return images
        labels = self.labels[picked]
        if self.label_mode == "int":
            return images, labels.astype(np.int32)
        if self.label_mode == "binary":
            return images, labels.astype(np.float32).reshape(-1, 1)
        return images, np.eye(len(self.class_names), dtype=np.float32)[labels]

    def on_epoch_end(self):
        self.epoch += 1
        self._set_order()


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """A dataset of (images, labels) batches from `directory`'s class subfolders, as Keras 3's
    (see the module docstring for what differs). `subset="both"` returns (training,
    validation)."""
    from .. import backend
    from ..preprocessing import image_files
    where = "image_dataset_from_directory"
    if labels != "inferred" and labels is not None:
        raise ValueError(f"{where}: argument labels must be 'inferred' or None in kiln, got "
                         f"{type(labels).__name__}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f"{where}: argument label_mode must be 'int', 'categorical', "
                         f"'binary' or None, got {label_mode!r}")
    if color_mode not in ("rgb", "rgba", "grayscale"):
        raise ValueError(f"{where}: argument color_mode must be 'rgb', 'rgba' or 'grayscale', "
                         f"got {color_mode!r}")
    if interpolation not in _RESAMPLING:
        raise ValueError(f"{where}: argument interpolation must be one of "
                         f"{sorted(_RESAMPLING)}, got {interpolation!r}")
    if pad_to_aspect_ratio:
        raise ValueError(f"{where}: pad_to_aspect_ratio=True is not supported yet; use "
                         "crop_to_aspect_ratio=True")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"{where}: argument batch_size must be a positive int (kiln has no "
                         f"unbatched datasets), got {batch_size!r}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    if subset not in (None, "training", "validation", "both"):
        raise ValueError(f"{where}: argument subset must be 'training', 'validation', 'both' "
                         f"or None, got {subset!r}")
    if bool(subset) != bool(validation_split):
        raise ValueError(f"{where}: pass validation_split and subset together, got "
                         f"validation_split={validation_split!r}, subset={subset!r}")
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"{where}: argument validation_split must be in (0, 1), got "
                         f"{validation_split!r}")
    image_files.pil_image()
    seed = int(np.random.randint(1e6)) if seed is None else int(seed)
    if labels is None:
        label_mode = None
    names, paths, ids = image_files.list_class_files(directory, class_names, FORMATS,
                                                     follow_links)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(f"{where}: label_mode='binary' needs exactly 2 classes, got {names}")
    if shuffle:
        # Keras shuffles the file list once with the seed, then splits it
        order = np.random.RandomState(seed).permutation(len(paths))
        paths, ids = [paths[i] for i in order], ids[order]
    if verbose:
        print(f"Found {len(paths)} files belonging to {len(names)} classes.")
    data_format = data_format or backend.image_data_format()

    def dataset(part, reshuffle):
        if not len(part):
            raise ValueError(f"{where}: no images found in {directory!r} for this subset "
                             f"(formats {FORMATS})")
        return ImageFolderDataset([paths[i] for i in part], ids[part], label_mode, names,
                                  image_size, color_mode, batch_size, reshuffle, seed,
                                  interpolation, crop_to_aspect_ratio, data_format)

    everything = np.arange(len(paths))
    if not validation_split:
        return dataset(everything, shuffle)
    validation_count = int(validation_split * len(paths))
    training = everything[:len(paths) - validation_count]
    validation = everything[len(paths) - validation_count:]
    if verbose and subset != "both":
        used = training if subset == "training" else validation
        print(f"Using {len(used)} files for {subset}.")
    if subset == "training":
        return dataset(training, shuffle)
    if subset == "validation":
        return dataset(validation, False)
    return dataset(training, shuffle), dataset(validation, False)
