"""Mixed precision policies (`keras.mixed_precision`).

'mixed_bfloat16' runs activations and convolution/dense inputs in bf16 with f32 master
weights and optimizer state. It needs native bf16 (avx512_bf16 or AMX); elsewhere the policy
stays float32 and says so once.
"""

import warnings

from ..binding import constants as dnnl
from ..binding.library import cpu_has

POLICIES = ("float32", "mixed_bfloat16")


def native_bf16():
    """True when oneDNN runs bf16 convolutions on native instructions on this CPU."""
    return cpu_has(dnnl.cpu_isa_avx512_core_bf16)


class Policy:
    """Args: name: 'float32' or 'mixed_bfloat16'."""

    def __init__(self, name):
        if name not in POLICIES:
            raise ValueError(f"Policy: argument name must be one of {list(POLICIES)}, "
                             f"got {name!r}")
        self.name = name

    @property
    def compute_dtype(self):
        return "bfloat16" if self.name == "mixed_bfloat16" else "float32"

    @property
    def variable_dtype(self):
        return "float32"

    def __repr__(self):
        return f'<Policy "{self.name}">'


_global = [Policy("float32")]


def runnable_policy(policy, stacklevel=2):
    """The policy kiln runs for `policy` on this CPU: mixed_bfloat16 falls back to float32,
    with a warning, where bf16 is not native."""
    policy = policy if isinstance(policy, Policy) else Policy(policy)
    if policy.name == "mixed_bfloat16" and not native_bf16():
        warnings.warn("mixed_bfloat16: this CPU has no native bf16 (avx512_bf16 or AMX); "
                      "keeping float32", stacklevel=stacklevel + 1)
        policy = Policy("float32")
    return policy


def set_global_policy(policy):
    """Set the policy for layers and models created afterwards."""
    _global[0] = runnable_policy(policy, stacklevel=2)


def global_policy():
    return _global[0]
