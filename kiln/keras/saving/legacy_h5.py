"""Keras 2's legacy HDF5 model file (`model.save('x.h5')`)."""


def save_legacy_h5(model, filepath, include_optimizer=True):
    raise NotImplementedError


def load_legacy_h5(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    raise NotImplementedError
