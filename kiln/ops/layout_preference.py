"""The one layout policy for primitives: run in the layouts kiln prefers (the forward's, the
input's as it comes, the buffer's own) unless oneDNN would fall back to its reference kernel
there, far slower than its jit kernels (docs/performance.md, 'Decisions and their
measurements'), while the alternative gets a real one.

oneDNN 3.2 picks a kernel per layout and CPU: a strided depthwise convolution's backward-data
in the blocked layouts of its forward, binary ops in nChw16c without AVX-512, sums over padded
blocks run only as reference code on AVX2. Each op names its preferred primitive and the
alternative (oneDNN's own choice, flat views of the same bytes, or None for a numba kernel of
its own), and this decides, at plan time.
"""

from ..binding.errors import DnnlError


def is_reference(primitive):
    """Whether oneDNN runs `primitive` with its reference (unoptimized) kernel."""
    return primitive is not None and primitive.pd.implementation.startswith("ref")


def prefer(make_preferred, make_alternative=lambda: None, untrusted=()):
    """`make_preferred()` unless it cannot be made, is one of the `untrusted` implementations,
    or is oneDNN's reference kernel while `make_alternative()` is not; else the alternative
    (made only then; None: the caller's own kernel)."""
    try:
        preferred = make_preferred()
    except DnnlError:
        return make_alternative()
    implementation = preferred.pd.implementation
    if any(name in implementation for name in untrusted):
        return make_alternative()
    if not implementation.startswith("ref"):
        return preferred
    alternative = make_alternative()
    return preferred if is_reference(alternative) else alternative
