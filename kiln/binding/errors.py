"""Every non-success oneDNN status becomes a Python exception that says what failed on what."""

from . import constants as dnnl


class DnnlError(RuntimeError):
    """A oneDNN call returned a non-success status.

    Attributes:
        primitive: what was being created or run (e.g. "convolution forward").
        shapes: a short description of the tensors involved.
        status: the oneDNN status name (e.g. "unimplemented").
    """

    def __init__(self, primitive, shapes, status_code):
        self.primitive = primitive
        self.shapes = shapes
        self.status = dnnl.STATUS_NAMES.get(status_code, f"status {status_code}")
        super().__init__(f"oneDNN {primitive} failed with status '{self.status}' for {shapes}")


def check(status_code, primitive, shapes=""):
    """Raise DnnlError unless `status_code` is success."""
    if status_code != dnnl.success:
        raise DnnlError(primitive, shapes, status_code)
