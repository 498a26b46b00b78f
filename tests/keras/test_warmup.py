"""The warm-up compiles every kernel a plan calls."""

import os
import re
import subprocess
import sys
from pathlib import Path

from kiln.keras.warmup import warm_up
from kiln.ops import (
    activity_regularization,
    broadcast_kernels,
    channel_affine_kernels,
    conv2d_channel_affine_kernels,
    dropout,
    eltwise,
    embedding,
    masks,
    max_pool_dropout,
    merge,
    noise,
    normalization,
    numba_config,
    random_draw,
    recurrent_fused_kernels,
    recurrent_kernels,
    sequence_dropout,
)
from kiln.ops.losses import binary, categorical, cosine, elementwise, label_checks, metric_kernels
from kiln.plan import traced_loss, weight_penalties
from kiln.runtime import optimizers


def test_warm_up_compiles_the_plan_kernels():
    """The kernels of the classic models and of the losses, metrics and layers beyond them
    (each compiled at the first fit otherwise: about 3.5 min over the test suite)."""
    warm_up()
    kernels = [dropout.dropout_forward_kernel, dropout.dropout_backward_kernel,
               categorical.softmax_crossentropy_dense,
               max_pool_dropout.max_pool_dropout_forward_kernel,
               max_pool_dropout.max_pool_dropout_backward_kernel, *optimizers.KERNELS,
               categorical.softmax_crossentropy_sparse, categorical.normalized_rows_dense,
               categorical.normalized_rows_sparse, binary.binary_crossentropy_kernel,
               elementwise.elementwise_loss_kernel, cosine.cosine_similarity_kernel,
               label_checks.first_bad_class_id, metric_kernels.sparse_accuracy_kernel,
               metric_kernels.confusion_kernel, activity_regularization.activity_penalty_kernel,
               noise.gaussian_noise_kernel, noise.gaussian_dropout_kernel,
               noise.channel_mask_kernel, normalization.coefficients_kernel,
               random_draw.draw_kernel,
               weight_penalties.penalty_kernel, weight_penalties.norm_constraint_kernel,
               eltwise.relu_backward_of_sum_kernel, merge.extreme_backward_kernel,
               broadcast_kernels.elementwise_kernel, broadcast_kernels.reduce_kernel,
               broadcast_kernels.zero_kernel, channel_affine_kernels.forward_kernel,
               channel_affine_kernels.backward_kernel,
               conv2d_channel_affine_kernels.affine_vectors,
               conv2d_channel_affine_kernels.affine_vector_grads,
               traced_loss.reduce_loss_kernel, recurrent_kernels.reverse_time,
               recurrent_kernels.fold_reset_after_bias,
               recurrent_kernels.unfold_reset_after_bias, recurrent_kernels.join_directions,
               recurrent_kernels.split_directions, recurrent_kernels.merge_final_states,
               recurrent_kernels.split_final_states_grad, recurrent_fused_kernels.recurrent_forward,
               recurrent_fused_kernels.recurrent_backward,
               recurrent_fused_kernels.draw_recurrent_dropout, embedding.gather_rows_kernel,
               embedding.scatter_add_rows_kernel, masks.step_mask_kernel,
               sequence_dropout.sequence_dropout_forward,
               sequence_dropout.sequence_dropout_backward]
    assert [kernel.py_func.__name__ for kernel in kernels if not kernel.signatures] == []


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


def test_only_numba_config_imports_numba():
    """numba reads NUMBA_CACHE_DIR once, when it is first imported: a kiln module importing
    numba before numba_config would put the cache back beside the sources, keyed only on
    each kernel's own file (an edited inlined helper would then run stale)."""
    package = Path(numba_config.__file__).resolve().parent.parent
    offenders = [str(path.relative_to(package)) for path in package.rglob("*.py")
                 if path.name != "numba_config.py"
                 and re.search(r"^\s*(import numba|from numba)", path.read_text(), re.M)]
    assert offenders == []


def test_a_fresh_interpreter_caches_kernels_in_the_stamped_folder():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    code = ("import kiln.ops.dropout, kiln.keras, numba\n"
            "from kiln.ops import numba_config\n"
            "print(numba.config.CACHE_DIR == numba_config._cache_dir())")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "True"
