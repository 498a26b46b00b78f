"""oneDNN's RNN cells and the tensors their primitives read (RecurrentOp and
BidirectionalRecurrentOp plan them): the cells, the arguments in the header's order, kiln's
plain buffers viewed as oneDNN's layer and state tensors, and the shapes whose bf16 kernels
oneDNN 3.2 cannot run."""

from dataclasses import dataclass

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc

F32 = dnnl.f32

# Under a bf16 plan, training plans run the RNN primitives in f32 too (between conversions):
# oneDNN 3.2's bf16 RNN backward (its `ref` implementation) is slower than the f32 one by more
# than the bf16 forward gains (Xeon with AMX, per call: LSTM(128) backward 11.2 -> 13.7 ms,
# forward 5.3 -> 2.8 ms; GRU(128) backward 8.2 -> 13.2 ms, forward 4.1 -> 3.8 ms;
# docs/performance.md). Inference plans run them in bf16 (imdb_lstm step 4.5 -> 2.5 ms).
BF16_TRAINING = False


@dataclass(frozen=True)
class Cell:
    """One of oneDNN's RNN cells: its C name, gates, bias rows and whether it has a cell
    state c (LSTM)."""

    primitive: str
    gates: int
    bias_gates: int
    cell_state: bool = False

    def create_function(self, what):
        return f"dnnl_{self.primitive}_{what}_primitive_desc_create"


VANILLA_RNN = Cell("vanilla_rnn", 1, 1)
LSTM = Cell("lstm", 4, 4, cell_state=True)
GRU = Cell("gru", 3, 3)
LBR_GRU = Cell("lbr_gru", 3, 4)  # Keras's reset_after=True

# SimpleRNN activations oneDNN's vanilla cell computes: (algorithm, alpha); a relu whose
# negative slope is 1 is the identity, Keras's 'linear'
VANILLA_ACTIVATIONS = {"tanh": (dnnl.eltwise_tanh, 0.0), "relu": (dnnl.eltwise_relu, 0.0),
                       "sigmoid": (dnnl.eltwise_logistic, 0.0),
                       "linear": (dnnl.eltwise_relu, 1.0)}

# the primitives' tensors in the header's order: name -> (argument, its gradient's argument)
TENSORS = {
    "src_layer": (dnnl.ARG_SRC_LAYER, dnnl.ARG_DIFF_SRC_LAYER),
    "src_iter": (dnnl.ARG_SRC_ITER, dnnl.ARG_DIFF_SRC_ITER),
    "src_iter_c": (dnnl.ARG_SRC_ITER_C, dnnl.ARG_DIFF_SRC_ITER_C),
    "weights_layer": (dnnl.ARG_WEIGHTS_LAYER, dnnl.ARG_DIFF_WEIGHTS_LAYER),
    "weights_iter": (dnnl.ARG_WEIGHTS_ITER, dnnl.ARG_DIFF_WEIGHTS_ITER),
    "bias": (dnnl.ARG_BIAS, dnnl.ARG_DIFF_BIAS),
    "dst_layer": (dnnl.ARG_DST_LAYER, dnnl.ARG_DIFF_DST_LAYER),
    "dst_iter": (dnnl.ARG_DST_ITER, dnnl.ARG_DIFF_DST_ITER),
    "dst_iter_c": (dnnl.ARG_DST_ITER_C, dnnl.ARG_DIFF_DST_ITER_C),
}
WEIGHTS = {"weights_layer": "kernel", "weights_iter": "recurrent_kernel"}  # -> Keras names


def plain_desc(dims, data_type=F32):
    return MemoryDesc.with_tag(dims, data_type)


def sequence_view(memory):
    """A plain (N, T, C) buffer as oneDNN's layer tensor: logical (T, N, C) in ntc."""
    n, t, c = memory.desc.dims
    return memory.view(MemoryDesc.with_tag((t, n, c), memory.desc.data_type, dnnl.ntc))


def state_view(memory):
    """A plain (N, units) buffer as oneDNN's state tensor (1, 1, N, units) in ldnc."""
    return memory.view(MemoryDesc.with_tag((1, 1, *memory.desc.dims), memory.desc.data_type,
                                           dnnl.ldnc))


def amx_k_tails(channels, units):
    """Whether oneDNN 3.2's bf16 RNN would run AMX kernels with a tail along K (the input
    channels or the units not a multiple of the K block, min(channels, units, 32)): those
    execute AMX instructions without a tile configuration and kill the process (SIGILL, seen
    on a Xeon with AMX for LSTM(48) on 32 channels, LSTM(32) on 20). An odd block makes
    oneDNN choose its avx512_core_bf16 kernels instead, which have no such fault."""
    block = min(channels, units, 32)
    return block % 2 == 0 and (channels % block != 0 or units % block != 0)


