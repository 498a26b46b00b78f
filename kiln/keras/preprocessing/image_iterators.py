"""The batch iterators of ImageDataGenerator: over numpy arrays (`flow`) and over image files
in class folders (`flow_from_directory`).

They are PyDatasets (Keras 2's Sequence), so fit fetches their batches in worker threads in
epoch order. A batch is a pure function of (seed, epoch, batch index): its sample order comes
from the epoch's shuffle and its transforms from a generator keyed by those three numbers, so
threads may build batches in any order and a seeded run repeats exactly. The seed, when not
given, is drawn from numpy's global generator (keras.utils.set_random_seed fixes it).
"""

import os
import threading
import warnings

import numpy as np

from ..utils.py_dataset import PyDataset
from . import image_files


class Iterator(PyDataset):
    """Batches of `batch_size` over `n` samples; also endless `next()` as in Keras 2."""

    white_list_formats = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")

    def __init__(self, n, batch_size, shuffle, seed):
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ValueError(f"{type(self).__name__}: argument batch_size must be a positive "
                             f"int, got {batch_size!r}")
        self.n, self.batch_size, self.shuffle = n, int(batch_size), shuffle
        self.seed = int(np.random.randint(2**31)) if seed is None else int(seed)
        self.epoch = 0
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self._set_index_array()

    def _set_index_array(self):
        if self.shuffle:
            self.index_array = np.random.default_rng([self.seed, self.epoch, 1]).permutation(
                self.n)
        else:
            self.index_array = np.arange(self.n)

    def __len__(self):
        return (self.n + self.batch_size - 1) // self.batch_size

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length "
                             f"{len(self)}")
        return self._batch_into(idx, None)

    def _batch_into(self, idx, buffer):
        """Batch `idx` of this epoch; x written into `buffer(shape)` when given."""
        index = self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)]
        rng = np.random.default_rng([self.seed, self.epoch, 2, int(idx)])
        shape = (len(index), *self.image_shape)
        out = np.empty(shape, np.float32) if buffer is None else buffer(shape)
        return self._batches_of_transformed_samples(index, rng, out)

    def on_epoch_end(self):
        self.epoch += 1
        self._set_index_array()

    def reset(self):
        self.batch_index = 0

    # Keras 2: `next(iterator)` cycles forever, reshuffling after each pass
    def __iter__(self):
        return self

    def __next__(self):
        with self.lock:
            if self.batch_index >= len(self):
                self.on_epoch_end()
                self.batch_index = 0
            idx = self.batch_index
            self.batch_index += 1
            self.total_batches_seen += 1
        return self._batch_into(idx, None)

    next = __next__

    def _save(self, batch, index, rng):
        for image, sample in zip(batch, index, strict=True):
            name = (f"{self.save_prefix}_{sample}_{rng.integers(10**7)}."
                    f"{self.save_format}")
            image_files.array_to_img(image, self.data_format, scale=True).save(
                os.path.join(self.save_to_dir, name))

    def _batches_of_transformed_samples(self, index, rng, out):
        raise NotImplementedError


class NumpyArrayIterator(Iterator):
    """Augmented batches of an image array (rank 4), with labels and extra inputs as given."""

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False,
                 sample_weight=None, seed=None, data_format="channels_last", save_to_dir=None,
                 save_prefix="", save_format="png", subset=None, ignore_class_split=False,
                 dtype="float32"):
        self.dtype = dtype
        x_misc = []
        if type(x) in (tuple, list):
            x_misc = ([np.asarray(x[1])] if type(x[1]) is not list
                      else [np.asarray(extra) for extra in x[1]])
            x = x[0]
            for extra in x_misc:
                if len(extra) != len(x):
                    raise ValueError(f"NumpyArrayIterator: all arrays of x must have the same "
                                     f"length, got {len(x)} and {len(extra)}")
        for name, other in (("y", y), ("sample_weight", sample_weight)):
            if other is not None and len(other) != len(x):
                raise ValueError(f"NumpyArrayIterator: x (images) and {name} must have the "
                                 f"same length, got {np.shape(x)} and {np.shape(other)}")
        if subset is not None:
            if subset not in ("training", "validation"):
                raise ValueError(f"NumpyArrayIterator: argument subset must be 'training' or "
                                 f"'validation', got {subset!r}")
            split = int(len(x) * image_data_generator._validation_split)
            if (y is not None and not ignore_class_split
                    and not np.array_equal(np.unique(y[:split]), np.unique(y[split:]))):
                raise ValueError("Training and validation subsets have different number of "
                                 "classes after the split. If your numpy arrays are sorted by "
                                 "the label, you might want to shuffle them.")
            part = slice(None, split) if subset == "validation" else slice(split, None)
            x, x_misc = x[part], [np.asarray(extra[part]) for extra in x_misc]
            y = None if y is None else y[part]
            sample_weight = None if sample_weight is None else sample_weight[part]
        self.x = np.asarray(x, dtype=dtype)
        if self.x.ndim != 4:
            raise ValueError(f"NumpyArrayIterator: input data must have rank 4, got shape "
                             f"{self.x.shape}")
        channels_axis = 3 if data_format == "channels_last" else 1
        if self.x.shape[channels_axis] not in (1, 3, 4):
            warnings.warn(f"NumpyArrayIterator: expected 1, 3 or 4 channels on axis "
                          f"{channels_axis} ({data_format}), got shape {self.x.shape}",
                          stacklevel=2)
        self.x_misc = x_misc
        self.y = None if y is None else np.asarray(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.data_format = data_format
        self.image_shape = self.x.shape[1:]
        self.save_to_dir, self.save_prefix = save_to_dir, save_prefix
        self.save_format = save_format
        image_data_generator.unfitted_warning()
        super().__init__(len(self.x), batch_size, shuffle, seed)

    def _batches_of_transformed_samples(self, index, rng, out):
        self.image_data_generator.augment_batch(self.x, index, rng, out)
        if self.save_to_dir:
            self._save(out, index, rng)
        misc = [extra[index] for extra in self.x_misc]
        output = (out if not misc else [out, *misc],)
        if self.y is None:
            return output[0]
        output += (self.y[index],)
        if self.sample_weight is not None:
            output += (self.sample_weight[index],)
        return output


class DirectoryIterator(Iterator):
    """Augmented batches of the images in the class subfolders of `directory`."""

    allowed_class_modes = {"categorical", "binary", "sparse", "input", None}

    def __init__(self, directory, image_data_generator, target_size=(256, 256),
                 color_mode="rgb", classes=None, class_mode="categorical", batch_size=32,
                 shuffle=True, seed=None, data_format="channels_last", save_to_dir=None,
                 save_prefix="", save_format="png", follow_links=False, subset=None,
                 interpolation="nearest", keep_aspect_ratio=False, dtype="float32"):
        image_files.pil_image()  # fail now, not in a worker thread, if Pillow is missing
        if class_mode not in self.allowed_class_modes:
            raise ValueError(f"DirectoryIterator: argument class_mode must be one of "
                             f"{sorted(map(str, self.allowed_class_modes))}, got "
                             f"{class_mode!r}")
        channels = {"rgb": 3, "rgba": 4, "grayscale": 1}
        if color_mode not in channels:
            raise ValueError(f"DirectoryIterator: argument color_mode must be 'rgb', 'rgba' or "
                             f"'grayscale', got {color_mode!r}")
        self.directory, self.image_data_generator = directory, image_data_generator
        self.target_size, self.color_mode = tuple(target_size), color_mode
        self.class_mode, self.dtype, self.data_format = class_mode, dtype, data_format
        self.interpolation, self.keep_aspect_ratio = interpolation, keep_aspect_ratio
        self.save_to_dir, self.save_prefix = save_to_dir, save_prefix
        self.save_format = save_format
        count = channels[color_mode]
        self.image_shape = (self.target_size + (count,) if data_format == "channels_last"
                            else (count,) + self.target_size)
        names, paths, labels = image_files.list_class_files(
            directory, classes, tuple("." + f for f in self.white_list_formats), follow_links)
        if subset is not None:
            # Keras 2 splits each class folder by file order: validation first
            fraction = image_data_generator._validation_split
            if subset not in ("training", "validation"):
                raise ValueError(f"DirectoryIterator: argument subset must be 'training' or "
                                 f"'validation', got {subset!r}")
            keep = np.zeros(len(paths), bool)
            for label in range(len(names)):
                members = np.flatnonzero(labels == label)
                start, stop = ((0, fraction) if subset == "validation" else (fraction, 1))
                keep[members[int(start * len(members)):int(stop * len(members))]] = True
            paths = [p for p, k in zip(paths, keep, strict=True) if k]
            labels = labels[keep]
        self.class_indices = {name: i for i, name in enumerate(names)}
        self.num_classes = len(names)
        self.filepaths = paths
        self.filenames = [os.path.relpath(p, directory) for p in paths]
        self.classes = labels.astype(np.int32)
        self.samples = len(paths)
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        super().__init__(self.samples, batch_size, shuffle, seed)

    @property
    def labels(self):
        return self.classes

    def _batches_of_transformed_samples(self, index, rng, out):
        loaded = np.empty(out.shape, np.float32)
        for i, j in enumerate(index):
            image = image_files.load_img(self.filepaths[j], color_mode=self.color_mode,
                                         target_size=self.target_size,
                                         interpolation=self.interpolation,
                                         keep_aspect_ratio=self.keep_aspect_ratio)
            loaded[i] = image_files.img_to_array(image, self.data_format)
            image.close()
        self.image_data_generator.augment_batch(loaded, np.arange(len(index)), rng, out)
        if self.save_to_dir:
            self._save(out, index, rng)
        if self.class_mode == "input":
            return out, out.copy()
        if self.class_mode in ("binary", "sparse"):
            return out, self.classes[index].astype(self.dtype)
        if self.class_mode == "categorical":
            labels = np.zeros((len(index), self.num_classes), dtype=self.dtype)
            labels[np.arange(len(index)), self.classes[index]] = 1.0
            return out, labels
        return out
