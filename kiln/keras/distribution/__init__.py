"""keras.distribution: data-parallel training over the ranks of an MPI job.

    keras.distribution.set_distribution(keras.distribution.DataParallel())
"""

from .distribution_lib import (
    DataParallel,
    distribution,
    get_device_count,
    list_devices,
    set_distribution,
)

__all__ = ["DataParallel", "distribution", "get_device_count", "list_devices",
           "set_distribution"]
