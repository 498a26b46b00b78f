"""The warm-up compiles every kernel a plan calls."""

import os

from kiln.ops import dropout, max_pool_dropout, numba_config, softmax_cross_entropy
from kiln.runtime import optimizers
from kiln.runtime.warmup import warm_up


def test_warm_up_compiles_the_plan_kernels():
    warm_up()
    kernels = [dropout.dropout_forward_kernel, dropout.dropout_backward_kernel,
               softmax_cross_entropy.softmax_cross_entropy_kernel, optimizers.sgd_kernel,
               optimizers.rmsprop_kernel, optimizers.adadelta_kernel, optimizers.adam_kernel,
               max_pool_dropout.max_pool_dropout_forward_kernel,
               max_pool_dropout.max_pool_dropout_backward_kernel]
    assert all(kernel.signatures for kernel in kernels)


def test_kernel_cache_is_keyed_by_the_sources(tmp_path, monkeypatch):
    """An edit anywhere in kiln (an inlined helper included) moves the cache folder."""
    stamp = numba_config._source_stamp()
    assert len(stamp) == 16 and numba_config._cache_dir().endswith(stamp)
    assert os.environ["NUMBA_CACHE_DIR"]  # set before numba was imported
    monkeypatch.setattr(numba_config, "__file__", str(tmp_path / "ops" / "numba_config.py"))
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "dropout.py").write_text("x = 1\n")
    first = numba_config._source_stamp()
    (tmp_path / "ops" / "dropout.py").write_text("x = 2\n")
    assert numba_config._source_stamp() != first
