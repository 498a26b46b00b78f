"""Plan entries that are not oneDNN primitives: compiled numba kernels and their arguments.

(oneDNN calls are binding.primitive.BoundCall.) Every entry offers `run()` and a `label`;
liveness (liveness.py) reads the buffers of an entry from its `args`, or from the arrays a
KernelCall captured.
"""

from ..binding.memory import Memory


class KernelCall:
    """A plan entry that is not a oneDNN primitive: a compiled numba kernel and its arrays."""

    __slots__ = ("function", "arguments", "label")

    def __init__(self, function, arguments, label):
        self.function = function
        self.arguments = tuple(arguments)
        self.label = label

    def run(self):
        self.function(*self.arguments)

    def relabeled(self, label):
        return type(self)(self.function, self.arguments, label)


class MemoryKernelCall(KernelCall):
    """A kernel call whose buffer arguments are plan Memory objects, read as arrays at every
    run: unlike captured arrays, they keep their place in liveness-based buffer sharing (the
    bytes of a Memory are only final once the plan is complete)."""

    __slots__ = ("args",)

    def __init__(self, function, arguments, label):
        super().__init__(function, arguments, label)
        # what liveness reads to find each buffer's lifetime, as for a primitive's arguments
        self.args = {index: argument for index, argument in enumerate(self.arguments)
                     if isinstance(argument, Memory)}

    def run(self):
        self.function(*[argument.as_array() if isinstance(argument, Memory) else argument
                        for argument in self.arguments])
