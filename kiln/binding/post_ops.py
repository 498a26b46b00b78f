"""What a primitive applies to its result before writing it: oneDNN post-ops, as a value.

A `PostOps` is a frozen sequence of `Eltwise` (an algorithm and its alpha / beta), `Binary`
(an algorithm and the descriptor of a second operand the primitive reads) and `Sum`
(accumulate into the destination). Ops build one from their fused parts (an activation, a
folded batch norm's scale and shift, a residual add) and hand it on; `Attributes` turns it
into oneDNN's attribute, the primitive cache keys on `key`, and labels print it. Nothing
downstream needs to know how an op chose it.
"""

from dataclasses import dataclass

from . import constants as dnnl
from .memory import layout_key


@dataclass(frozen=True)
class Eltwise:
    """dst = alg(dst; alpha, beta)."""

    alg: int
    alpha: float = 0.0
    beta: float = 0.0

    @property
    def key(self):
        return ("eltwise", self.alg, self.alpha, self.beta)


@dataclass(frozen=True, eq=False)
class Binary:
    """dst = dst (alg) operand, the operand read at execution as `post_op_arg(index)`."""

    alg: int
    operand: object  # a MemoryDesc: compared by layout (descriptors have no hash)

    @property
    def key(self):
        return ("binary", self.alg, layout_key(self.operand))

    def __eq__(self, other):
        return isinstance(other, Binary) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


@dataclass(frozen=True)
class Sum:
    """dst = result + scale * dst before (the destination already holds the addend)."""

    scale: float = 1.0

    @property
    def key(self):
        return ("sum", self.scale)


@dataclass(frozen=True)
class PostOps:
    """Post-ops applied in order; `a + b` runs a's, then b's."""

    items: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "items", tuple(self.items))

    def __add__(self, other):
        return PostOps(self.items + other.items)

    def __bool__(self):
        return bool(self.items)

    def __len__(self):
        return len(self.items)

    @property
    def key(self):
        return tuple(item.key for item in self.items)

    def binary_indices(self):
        """The positions of the Binary items: their operands' argument numbers at execution."""
        return [index for index, item in enumerate(self.items) if isinstance(item, Binary)]


NONE = PostOps()


def eltwise(alg, alpha=0.0, beta=0.0):
    """One eltwise post-op."""
    return PostOps((Eltwise(alg, alpha, beta),))


def binary(alg, operand):
    """One binary post-op reading `operand` (a MemoryDesc)."""
    return PostOps((Binary(alg, operand),))


def accumulate(scale=1.0):
    """One sum post-op (dst = result + scale * dst)."""
    return PostOps((Sum(scale),))


def negate():
    """dst = -dst."""
    return eltwise(dnnl.eltwise_linear, -1.0, 0.0)


__all__ = ["Eltwise", "Binary", "Sum", "PostOps", "NONE", "eltwise", "binary", "accumulate",
           "negate"]
