"""`keras2_cache`: an empty temporary Keras cache for the Keras 2 example scripts;
`real_mnist`: mnist.load_data() of $KILN_DATASETS, read once (see mnist_subset.py)."""

import random
import urllib.error
import urllib.request

import numpy as np
import pytest

from kiln.keras import backend, initializers
from kiln.keras.datasets import mnist


@pytest.fixture
def keras2_cache(tmp_path, monkeypatch):
    """KERAS_HOME points into tmp_path (its datasets/ folder, returned, is where the test
    writes the files the script loads), KILN_DATASETS is unset and urlopen refuses, so only
    the written files are read; the data format settings are reset and every random
    generator a script uses (kiln's initializers, numpy's global one, `random`) is seeded."""
    home = tmp_path / "keras_home"
    (home / "datasets").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.delenv("KILN_DATASETS", raising=False)

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    backend._reset_for_tests()
    initializers.set_random_seed(0)
    np.random.seed(0)
    random.seed(0)
    yield home / "datasets"
    backend._reset_for_tests()


@pytest.fixture(scope="session")
def real_mnist():
    return mnist.load_data()
