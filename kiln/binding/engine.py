"""The process-wide CPU engine and stream (oneDNN needs exactly one of each here)."""

import ctypes
import functools

from . import constants as dnnl
from .errors import check
from .library import lib


@functools.cache
def cpu_engine():
    engine = ctypes.c_void_p()
    check(lib.dnnl_engine_create(ctypes.byref(engine), dnnl.cpu, 0), "engine create", "cpu 0")
    return engine


@functools.cache
def cpu_stream():
    stream = ctypes.c_void_p()
    check(lib.dnnl_stream_create(ctypes.byref(stream), cpu_engine(), dnnl.stream_in_order),
          "stream create", "cpu")
    return stream


def wait():
    check(lib.dnnl_stream_wait(cpu_stream()), "stream wait")
