"""The file index behind keras.utils.*_dataset_from_directory, as Keras 3's dataset_utils.

Classes are the sorted subfolders (those not starting with '.') or the given `class_names`,
in that order; below each, folders are walked in sorted order and their files taken in sorted
order, keeping those whose lower-cased name ends with one of `formats`. A shuffle permutes
the paths and the labels with `numpy.random.RandomState(seed).shuffle`, as Keras does, so the
same seed gives Keras's order; the validation split then takes the last
`int(validation_split * n)` files.
"""

import os

import numpy as np


def _walk_files(directory, follow_links, formats):
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda entry: entry[0]):
        for name in sorted(files):
            if name.lower().endswith(formats):
                yield root, name


def _index_subdirectory(directory, follow_links, formats):
    """Paths below `directory`, relative to its parent (Keras's relative paths)."""
    folder = os.path.basename(directory)
    return [os.path.join(folder, os.path.relpath(os.path.join(root, name), directory))
            for root, name in _walk_files(directory, follow_links, formats)]


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None,
                    follow_links=False, verbose=True, where="index_directory"):
    """(file paths, labels, class names) of the files in `directory`, as Keras 3's
    `dataset_utils.index_directory`. `labels`: 'inferred' (the class subfolders), None (every
    file below `directory`, no labels, class names None) or a list of integer labels, one per
    file in sorted order (class names are then the sorted distinct labels as strings)."""
    if not os.path.isdir(directory):
        raise ValueError(f"{where}: argument directory must be an existing folder, got "
                         f"{str(directory)!r}")
    if labels == "inferred":
        subdirs = [name for name in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, name)) and not name.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError(f"{where}: argument class_names must name subfolders of the "
                                 f"directory: expected {subdirs} (or a subset of it), got "
                                 f"class_names={list(class_names)}")
            subdirs = list(class_names)
    else:
        if class_names is not None:
            raise ValueError(f"{where}: argument class_names can only be given with "
                             f"labels='inferred', got labels={labels!r:.60} and "
                             f"class_names={class_names}")
        subdirs = [""]
    filenames, file_labels = [], []
    for index, subdir in enumerate(subdirs):
        found = _index_subdirectory(os.path.join(directory, subdir), follow_links, formats)
        filenames += found
        file_labels += [index] * len(found)
    if labels == "inferred":
        class_names = list(subdirs)
        labels = np.array(file_labels, dtype="int32")
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(filenames):
            raise ValueError(f"{where}: argument labels must have one label per file: "
                             f"len(labels) is {len(labels)} while {len(filenames)} files were "
                             f"found in directory {str(directory)!r}")
        class_names = [str(label) for label in sorted(set(labels))]
        labels = list(labels)
    if verbose:
        if labels is None:
            print(f"Found {len(filenames)} files.")
        else:
            print(f"Found {len(filenames)} files belonging to {len(class_names)} classes.")
    file_paths = [os.path.join(directory, name) for name in filenames]
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(file_paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return file_paths, labels, class_names


def check_validation_split_arg(validation_split, subset, shuffle, seed, where):
    """Keras's checks of validation_split / subset / seed, with the function named."""
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"{where}: argument validation_split must be between 0 and 1, got "
                         f"{validation_split!r}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError(f"{where}: arguments validation_split and subset go together (one "
                         f"is set, so the other must be), got validation_split="
                         f"{validation_split!r}, subset={subset!r}")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f"{where}: argument subset must be 'training', 'validation' or "
                         f"'both', got {subset!r}")
    if validation_split and shuffle and seed is None:
        raise ValueError(f"{where}: argument seed is required with validation_split and "
                         "shuffle=True, so that the training and validation subsets do not "
                         "overlap")


def training_or_validation_split(samples, labels, validation_split, subset):
    """The first n - int(validation_split * n) samples for 'training', the rest for
    'validation' (all of them without a split), with Keras's "Using N files for ..." line."""
    if not validation_split:
        return samples, labels
    validation_count = int(validation_split * len(samples))
    training_count = len(samples) - validation_count
    part = slice(None, training_count) if subset == "training" else slice(training_count, None)
    count = training_count if subset == "training" else validation_count
    print(f"Using {count} files for {subset}.")
    return samples[part], (None if labels is None else labels[part])
