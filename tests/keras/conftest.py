"""Fixtures for the kiln.keras layer / model / optimizer / training tests.

`kiln_keras_env` is opt-in (use it with `pytestmark = pytest.mark.usefixtures(...)`) so the
other test files of this folder keep their own set-up: it points KERAS_HOME at an empty folder
(no user keras.json changes the data format or epsilon), forgets cached backend settings before
and after, and seeds the initializers so weights are reproducible.
"""

import pytest

from kiln.keras import backend, initializers


@pytest.fixture
def kiln_keras_env(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    backend._reset_for_tests()
    initializers.set_random_seed(1234)
    yield
    backend._reset_for_tests()
