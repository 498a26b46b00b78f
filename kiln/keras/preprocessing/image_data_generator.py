"""ImageDataGenerator: Keras 2's real-time image augmentation, run by compiled kernels.

Keras 3 dropped this class; the classic Keras 2 scripts (cifar10_cnn) still use it, so kiln
keeps its arguments, its order of operations (affine transform, channel shift, flips,
brightness, preprocessing_function, rescale, sample-wise then feature-wise normalization, ZCA)
and its `fit` / `flow` / `flow_from_directory`. The difference is speed and reproducibility:
each batch draws its parameters as vectors from a generator keyed by (seed, epoch, batch
index), and `kiln.data.augmentation` transforms the whole batch in one GIL-free pass in the
worker threads that fit uses to fetch batches, while the step runs.
"""

import warnings

import numpy as np

from ...data import augmentation as kernels
from . import image_files

_EMPTY = np.empty(0, np.float32)


def _shift_draws(rng, shift_range, count, size):
    """Keras 2's width/height shift: a float r gives uniform(-r, r), an int n one of
    0..n-1 pixels and a list one of its values, with a random sign; ranges below 1 are
    fractions of `size`."""
    if not shift_range:
        return np.zeros(count)
    if isinstance(shift_range, (int, np.integer)) or np.ndim(shift_range) == 1:
        choices = np.arange(shift_range) if np.ndim(shift_range) == 0 else np.asarray(
            shift_range, dtype=np.float64)
        shifts = rng.choice(choices, count) * rng.choice([-1, 1], count)
    else:
        shifts = rng.uniform(-shift_range, shift_range, count)
    if np.max(shift_range) < 1:
        shifts = shifts * size
    return shifts.astype(np.float64)


class ImageDataGenerator:
    """Generates batches of image data with real-time augmentation (Keras 2 arguments).

    Example (Keras 2's cifar10_cnn):

        datagen = ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
                                     horizontal_flip=True)
        datagen.fit(x_train)
        model.fit_generator(datagen.flow(x_train, y_train, batch_size=32), epochs=100,
                            validation_data=(x_test, y_test), workers=4)
    """

    def __init__(self, featurewise_center=False, samplewise_center=False,
                 featurewise_std_normalization=False, samplewise_std_normalization=False,
                 zca_whitening=False, zca_epsilon=1e-6, rotation_range=0, width_shift_range=0.0,
                 height_shift_range=0.0, brightness_range=None, shear_range=0.0, zoom_range=0.0,
                 channel_shift_range=0.0, fill_mode="nearest", cval=0.0, horizontal_flip=False,
                 vertical_flip=False, rescale=None, preprocessing_function=None,
                 data_format=None, validation_split=0.0, interpolation_order=1,
                 dtype="float32"):
        from .. import backend
        data_format = data_format or backend.image_data_format()
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"ImageDataGenerator: argument data_format must be "
                             f"'channels_last' or 'channels_first', got {data_format!r}")
        if fill_mode not in kernels.FILL_MODES:
            raise ValueError(f"ImageDataGenerator: argument fill_mode must be one of "
                             f"{sorted(kernels.FILL_MODES)}, got {fill_mode!r}")
        if interpolation_order != 1:
            raise ValueError("ImageDataGenerator: argument interpolation_order must be 1 (the "
                             f"bilinear sampling Keras 2 uses by default), got "
                             f"{interpolation_order!r}")
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(f"ImageDataGenerator: argument validation_split must be strictly "
                             f"between 0 and 1, got {validation_split!r}")
        if isinstance(zoom_range, (float, int)):
            zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
            zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(f"ImageDataGenerator: argument zoom_range must be a float or two "
                             f"floats, got {zoom_range!r}")
        if brightness_range is not None and (not isinstance(brightness_range, (tuple, list))
                                             or len(brightness_range) != 2):
            raise ValueError(f"ImageDataGenerator: argument brightness_range must be two "
                             f"floats, got {brightness_range!r}")
        self.featurewise_center, self.samplewise_center = featurewise_center, samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening, self.zca_epsilon = zca_whitening, zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range, self.height_shift_range = width_shift_range, height_shift_range
        self.brightness_range, self.shear_range = brightness_range, shear_range
        self.zoom_range, self.channel_shift_range = zoom_range, channel_shift_range
        self.fill_mode, self.cval = fill_mode, cval
        self.horizontal_flip, self.vertical_flip = horizontal_flip, vertical_flip
        self.rescale, self.preprocessing_function = rescale, preprocessing_function
        self.data_format, self.dtype = data_format, dtype
        self.interpolation_order = interpolation_order
        self._validation_split = validation_split
        self.channel_axis, self.row_axis, self.col_axis = (
            (3, 1, 2) if data_format == "channels_last" else (1, 2, 3))
        self.mean = self.std = self.zca_whitening_matrix = None
        # Keras 2 turns on the steps the asked-for ones need, with a warning
        if zca_whitening:
            if not featurewise_center:
                self.featurewise_center = True
                warnings.warn("ImageDataGenerator: zca_whitening turns on featurewise_center",
                              stacklevel=2)
            if featurewise_std_normalization:
                self.featurewise_std_normalization = False
                warnings.warn("ImageDataGenerator: zca_whitening turns off "
                              "featurewise_std_normalization", stacklevel=2)
        if featurewise_std_normalization and not featurewise_center:
            self.featurewise_center = True
            warnings.warn("ImageDataGenerator: featurewise_std_normalization turns on "
                          "featurewise_center", stacklevel=2)
        if samplewise_std_normalization and not samplewise_center:
            self.samplewise_center = True
            warnings.warn("ImageDataGenerator: samplewise_std_normalization turns on "
                          "samplewise_center", stacklevel=2)

    # -- random parameters ----------------------------------------------------------------
    def draw_parameters(self, rng, count, image_shape):
        """A kernels.parameter_table of `count` random transforms for images of
        `image_shape` (one image, in data_format), drawn from numpy Generator `rng`."""
        rows = image_shape[self.row_axis - 1]
        cols = image_shape[self.col_axis - 1]
        table = kernels.parameter_table(count)
        if self.rotation_range:
            table[:, kernels.THETA] = rng.uniform(-self.rotation_range, self.rotation_range,
                                                  count)
        table[:, kernels.TX] = _shift_draws(rng, self.height_shift_range, count, rows)
        table[:, kernels.TY] = _shift_draws(rng, self.width_shift_range, count, cols)
        if self.shear_range:
            table[:, kernels.SHEAR] = rng.uniform(-self.shear_range, self.shear_range, count)
        if self.zoom_range[0] != 1 or self.zoom_range[1] != 1:
            zooms = rng.uniform(self.zoom_range[0], self.zoom_range[1], (count, 2))
            table[:, kernels.ZX], table[:, kernels.ZY] = zooms[:, 0], zooms[:, 1]
        if self.horizontal_flip:
            table[:, kernels.FLIP_H] = rng.random(count) < 0.5
        if self.vertical_flip:
            table[:, kernels.FLIP_V] = rng.random(count) < 0.5
        if self.channel_shift_range != 0:
            table[:, kernels.CHANNEL_SHIFT] = rng.uniform(-self.channel_shift_range,
                                                          self.channel_shift_range, count)
            table[:, kernels.HAS_CHANNEL_SHIFT] = 1
        return table

    def get_random_transform(self, img_shape, seed=None):
        """Keras 2's dict of one image's random transform."""
        rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
        row = self.draw_parameters(rng, 1, img_shape)[0]
        brightness = None
        if self.brightness_range is not None:
            brightness = rng.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": row[kernels.THETA], "tx": row[kernels.TX], "ty": row[kernels.TY],
                "shear": row[kernels.SHEAR], "zx": row[kernels.ZX], "zy": row[kernels.ZY],
                "flip_horizontal": bool(row[kernels.FLIP_H]),
                "flip_vertical": bool(row[kernels.FLIP_V]),
                "channel_shift_intensity": (row[kernels.CHANNEL_SHIFT]
                                            if row[kernels.HAS_CHANNEL_SHIFT] else None),
                "brightness": brightness}

    def apply_transform(self, x, transform_parameters):
        """One image (in data_format) transformed by a Keras 2 parameter dict."""
        p = transform_parameters
        table = kernels.parameter_table(1)
        for key, column in (("theta", kernels.THETA), ("tx", kernels.TX), ("ty", kernels.TY),
                            ("shear", kernels.SHEAR), ("zx", kernels.ZX), ("zy", kernels.ZY)):
            if p.get(key) is not None:
                table[0, column] = p[key]
        table[0, kernels.FLIP_H] = bool(p.get("flip_horizontal", False))
        table[0, kernels.FLIP_V] = bool(p.get("flip_vertical", False))
        if p.get("channel_shift_intensity") is not None:
            table[0, kernels.CHANNEL_SHIFT] = p["channel_shift_intensity"]
            table[0, kernels.HAS_CHANNEL_SHIFT] = 1
        out = np.empty((1, *np.shape(x)), np.float32)
        self._transform(np.asarray(x)[None], np.zeros(1, np.int64), table, out,
                        [p.get("brightness")])
        return out[0]

    def random_transform(self, x, seed=None):
        return self.apply_transform(x, self.get_random_transform(np.shape(x), seed))

    # -- the batch path ---------------------------------------------------------------------
    def _hwc(self, array):
        return array if self.data_format == "channels_last" else array.transpose(0, 2, 3, 1)

    def _transform(self, images, index, table, out, brightness=None):
        kernels.transform_batch(self._hwc(images), index.astype(np.int64, copy=False), table,
                                self._hwc(out), kernels.FILL_MODES[self.fill_mode],
                                float(self.cval))
        if brightness is not None:
            for i, factor in enumerate(brightness):
                if factor is not None:
                    out[i] = _brightness(out[i], factor, self.data_format)

    def augment_batch(self, images, index, rng, out):
        """out = the augmented, standardized images[index] (float32, in data_format), Keras
        2's per-image pipeline done batch-wide; `rng` draws this batch's transforms."""
        table = self.draw_parameters(rng, len(index), images.shape[1:])
        brightness = None
        if self.brightness_range is not None:
            brightness = list(rng.uniform(self.brightness_range[0], self.brightness_range[1],
                                          len(index)))
        self._transform(images, index, table, out, brightness)
        self._standardize_batch(out)
        return out

    def _standardize_batch(self, out):
        if self.preprocessing_function is not None:
            for i in range(len(out)):
                out[i] = self.preprocessing_function(out[i])
        mean = std = _EMPTY
        if self.featurewise_center and self.mean is not None:
            mean = np.ascontiguousarray(self.mean, np.float32).reshape(-1)
        if self.featurewise_std_normalization and self.std is not None:
            std = np.ascontiguousarray(self.std, np.float32).reshape(-1)
        kernels.standardize_batch(self._hwc(out), float(self.rescale or 0.0),
                                  bool(self.samplewise_center),
                                  bool(self.samplewise_std_normalization), mean, std)
        if self.zca_whitening and self.zca_whitening_matrix is not None:
            flat = out.reshape(len(out), -1)
            flat[...] = flat @ self.zca_whitening_matrix
        return out

    def unfitted_warning(self):
        """The Keras 2 warning when feature-wise statistics are asked for but not fitted."""
        for flag, value, name in ((self.featurewise_center, self.mean, "featurewise_center"),
                                  (self.featurewise_std_normalization, self.std,
                                   "featurewise_std_normalization"),
                                  (self.zca_whitening, self.zca_whitening_matrix,
                                   "zca_whitening")):
            if flag and value is None:
                warnings.warn(f"This ImageDataGenerator specifies `{name}`, but it hasn't been "
                              "fit on any training data. Fit it first by calling "
                              "`.fit(numpy_data)`.", stacklevel=3)

    def standardize(self, x):
        """Keras 2's standardize on an image or a batch, in place where x is float."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= (np.std(x, keepdims=True) + 1e-6)
        if self.featurewise_center and self.mean is not None:
            x -= self.mean
        if self.featurewise_std_normalization and self.std is not None:
            x /= (self.std + 1e-6)
        if self.zca_whitening and self.zca_whitening_matrix is not None:
            flat = x.reshape(-1, np.prod(x.shape[-3:]))
            x = np.reshape(flat @ self.zca_whitening_matrix, x.shape)
        self.unfitted_warning()
        return x

    # -- statistics -------------------------------------------------------------------------
    def fit(self, x, augment=False, rounds=1, seed=None):
        """Feature-wise mean, std and ZCA matrix from sample data, as Keras 2."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(f"ImageDataGenerator.fit: argument x must have rank 4, got shape "
                             f"{x.shape}")
        if x.shape[self.channel_axis] not in (1, 3, 4):
            warnings.warn(f"ImageDataGenerator.fit: expected 1, 3 or 4 channels on axis "
                          f"{self.channel_axis} ({self.data_format}), got shape {x.shape}",
                          stacklevel=2)
        if not (self.featurewise_center or self.featurewise_std_normalization
                or self.zca_whitening):
            return  # no statistics asked for (cifar10_cnn calls fit anyway): skip the copy
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
            augmented = np.empty((rounds * len(x), *x.shape[1:]), np.float32)
            for r in range(rounds):
                table = self.draw_parameters(rng, len(x), x.shape[1:])
                self._transform(x, np.arange(len(x)), table, augmented[r * len(x):
                                                                       (r + 1) * len(x)])
            x = augmented
        shape = [1, 1, 1]
        shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        axes = (0, self.row_axis, self.col_axis)
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=axes), shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=axes), shape)
            x /= (self.std + 1e-6)
        if self.zca_whitening:
            flat = np.reshape(x, (len(x), -1))
            u, s, _ = np.linalg.svd(flat.T, full_matrices=False)
            inverse = np.sqrt(len(x)) / (s + self.zca_epsilon)
            self.zca_whitening_matrix = ((u * inverse) @ u.T).astype(np.float32)

    # -- iterators --------------------------------------------------------------------------
    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None,
             save_to_dir=None, save_prefix="", save_format="png", ignore_class_split=False,
             subset=None):
        """A NumpyArrayIterator over x (and y, sample_weight) with this augmentation."""
        from .image_iterators import NumpyArrayIterator
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle,
                                  sample_weight=sample_weight, seed=seed,
                                  data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format,
                                  ignore_class_split=ignore_class_split, subset=subset,
                                  dtype=self.dtype)

    def flow_from_directory(self, directory, target_size=(256, 256), color_mode="rgb",
                            classes=None, class_mode="categorical", batch_size=32, shuffle=True,
                            seed=None, save_to_dir=None, save_prefix="", save_format="png",
                            follow_links=False, subset=None, interpolation="nearest",
                            keep_aspect_ratio=False):
        """A DirectoryIterator over the images in the class subfolders of `directory`."""
        from .image_iterators import DirectoryIterator
        return DirectoryIterator(directory, self, target_size=target_size,
                                 color_mode=color_mode, classes=classes, class_mode=class_mode,
                                 batch_size=batch_size, shuffle=shuffle, seed=seed,
                                 data_format=self.data_format, save_to_dir=save_to_dir,
                                 save_prefix=save_prefix, save_format=save_format,
                                 follow_links=follow_links, subset=subset,
                                 interpolation=interpolation,
                                 keep_aspect_ratio=keep_aspect_ratio, dtype=self.dtype)


def _brightness(image, factor, data_format):
    """Keras 2's apply_brightness_shift(x, factor, scale=False) through Pillow."""
    from PIL import ImageEnhance
    low, high = float(np.min(image)), float(np.max(image))
    outside = low < 0 or high > 255
    picture = image_files.array_to_img(image, data_format, scale=outside)
    result = image_files.img_to_array(ImageEnhance.Brightness(picture).enhance(factor),
                                      data_format)
    if outside:
        result = result / 255 * (high - low) + low
    return result
