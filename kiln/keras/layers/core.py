"""Keras 2's `keras.layers.core` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .activation import Activation  # noqa: F401
from .activity_regularization import ActivityRegularization  # noqa: F401
from .dense import Dense  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .flatten import Flatten  # noqa: F401
from .lambda_layer import Lambda  # noqa: F401
from .masking import Masking  # noqa: F401
from .permute import Permute  # noqa: F401
from .repeat_vector import RepeatVector  # noqa: F401
from .reshape import Reshape  # noqa: F401
from .spatial_dropout1d import SpatialDropout1D  # noqa: F401
from .spatial_dropout2d import SpatialDropout2D  # noqa: F401

__all__ = []
