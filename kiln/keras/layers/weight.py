"""Weight: a layer variable as Keras shows it; its value lives in a ParameterStore.

A layer creates its weights in a store of its own; the model that trains it adopts them into
the model's store, where a oneDNN primitive chooses each value's layout and one arena packs
them all. A layer shared by two models goes to the store of the model that runs: its value is
copied into that model's own copy (ParameterStore.receive), and `Weight.store` is the store
that holds the current value, so every model and `numpy()` see the same weights.
"""

import numpy as np


class Weight:
    """Args:
        store: the ParameterStore that holds the value now.
        path: "<layer name>/<weight name>", the name in the store and in error messages.
        shape: the Keras shape (e.g. a conv kernel (kh, kw, in, out)).
        trainable: False for state the step updates itself (BatchNormalization's moving
            statistics); a frozen layer's weights stay trainable=True but are not updated.
    """

    def __init__(self, store, path, shape, trainable=True):
        self.store, self.path, self.shape, self.trainable = store, path, tuple(shape), trainable

    @property
    def name(self):
        return self.path.rsplit("/", 1)[-1]

    @property
    def dtype(self):
        return "float32"

    def numpy(self):
        return self.store.get_value(self.path).reshape(self.shape)

    def assign(self, value):
        value = np.asarray(value, dtype=np.float32)
        if value.shape != self.shape:
            raise ValueError(f"weight '{self.path}': expected shape {self.shape}, "
                             f"got {value.shape}")
        self.store.set_value(self.path, value)

    def move_to(self, store):
        """Make `store` hold this weight's current value."""
        if self.store is not store:
            store.receive(self.path, self.store)
            self.store = store

    def __array__(self, dtype=None, copy=None):
        value = self.numpy()
        return value if dtype is None else value.astype(dtype)

    def __repr__(self):
        return f"<Weight {self.path} shape={self.shape}>"

    # a custom layer's call() computes with its weights as with tensors (self.w * x)
    custom = False  # made by Keras's add_weight: its logical dims follow its use

    def _operator(self, name, *arguments):
        from .. import ops  # keras.ops uses this module: imported when first needed

        return getattr(ops, name)(*arguments)

    def __add__(self, other):
        return self._operator("add", self, other)

    def __radd__(self, other):
        return self._operator("add", other, self)

    def __sub__(self, other):
        return self._operator("subtract", self, other)

    def __rsub__(self, other):
        return self._operator("subtract", other, self)

    def __mul__(self, other):
        return self._operator("multiply", self, other)

    def __rmul__(self, other):
        return self._operator("multiply", other, self)

    def __truediv__(self, other):
        return self._operator("divide", self, other)

    def __rtruediv__(self, other):
        return self._operator("divide", other, self)

    def __matmul__(self, other):
        return self._operator("matmul", self, other)

    def __rmatmul__(self, other):
        return self._operator("matmul", other, self)
