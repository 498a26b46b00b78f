"""Binding: libdnnl (oneDNN v3.2, from the onednn-cpu-gomp wheel) through ctypes.

`library` declares the C functions, `constants` the enum values (both checked against the
headers by tests), `memory` wraps descriptors and buffers, `primitive` creates, caches and binds
primitives, `errors` turns every non-success status into a DnnlError.
"""

from . import constants
from .errors import DnnlError
from .library import lib

__all__ = ["constants", "DnnlError", "lib"]
