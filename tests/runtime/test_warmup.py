"""The warm-up compiles every kernel a plan calls."""

from kiln.ops import dropout, softmax_cross_entropy
from kiln.runtime import optimizers
from kiln.runtime.warmup import warm_up


def test_warm_up_compiles_the_plan_kernels():
    warm_up()
    kernels = [dropout.dropout_forward_kernel, dropout.dropout_backward_kernel,
               softmax_cross_entropy.softmax_cross_entropy_kernel, optimizers.sgd_kernel,
               optimizers.rmsprop_kernel, optimizers.adadelta_kernel, optimizers.adam_kernel]
    assert all(kernel.signatures for kernel in kernels)
