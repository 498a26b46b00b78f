"""Keras layers (`keras.layers`).

Every module of this package is imported and its layers are exported under their own names:
the names in the module's `__all__` when it has one (Keras's other spellings, the merge
functions, `Input`), else every public Layer subclass the module defines. So a new layer is
one file here; tests/keras/layers/test_layer_exports.py lists what `keras.layers` offers.
"""

import importlib
import pkgutil

from .base_layer import Layer


def _exports(module):
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [name for name, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, Layer)
            and value.__module__ == module.__name__ and not name.startswith("_")]


__all__ = []
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
    _module = importlib.import_module(f".{_info.name}", __name__)
    for _name in _exports(_module):
        globals()[_name] = getattr(_module, _name)
        __all__.append(_name)
del _info, _module, _name
