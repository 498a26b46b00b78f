"""oneDNN v3.2 C API constants used by kiln.

Values are copied from the oneDNN 3.2 headers (`dnnl_types.h`, `dnnl_common_types.h`);
`tests/binding/test_declarations.py` compiles the headers and checks every name here.
Names drop the `dnnl_` / `DNNL_` prefix.
"""

# dnnl_status_t
success = 0
out_of_memory = 1
invalid_arguments = 2
unimplemented = 3
last_impl_reached = 4
runtime_error = 5
not_required = 6

STATUS_NAMES = {
    0: "success", 1: "out_of_memory", 2: "invalid_arguments", 3: "unimplemented",
    4: "last_impl_reached", 5: "runtime_error", 6: "not_required",
}

# dnnl_data_type_t
data_type_undef = 0
f16 = 1
bf16 = 2
f32 = 3
s32 = 4
s8 = 5
u8 = 6

# dnnl_format_tag_t (plain tags; logical dims are always N, C, H, W / O, I, H, W)
format_tag_undef = 0
format_tag_any = 1
a = 2
ab = 3
abc = 4
abcd = 5
acdb = 22    # nhwc
ba = 14      # io
bcda = 26    # (C, H, W, O): a flattened channels_first feature order feeding a dense layer
cdba = 28    # hwio
cdab = 27    # (kh, kw, O, I): a Keras Conv2DTranspose kernel
abcde = 6
decab = 39   # (kh, kw, I/g, g, O/g): a Keras grouped or depthwise kernel
aBcd16b = 78  # nChw16c
aBcd8b = 102  # nChw8c
aBcd4b = 84   # nChw4c
# RNN tags (logical dims: layers L, directions D, time T, batch N, gates G, channels I / O / C)
tnc = 4       # activations (T, N, C) stored time-major
ntc = 16      # activations (T, N, C) stored batch-major: Keras's (N, T, C)
ldnc = 5      # states (L, D, N, C)
ldigo = 6     # weights (L, D, I, G, O): a Keras kernel (I, G * O)
ldgoi = 31    # weights (L, D, I, G, O) stored (L, D, G, O, I)
ldgo = 5      # bias (L, D, G, O)

# dnnl_format_kind_t
format_kind_undef = 0
format_kind_any = 1
blocked = 2

# dnnl_primitive_kind_t (what query_primitive_kind answers)
reorder = 1
shuffle = 2
concat = 3
sum = 4
convolution = 5
deconvolution = 6
eltwise = 7
lrn = 8
batch_normalization = 9
inner_product = 10
rnn = 11
binary = 13
matmul = 14
resampling = 15
pooling = 16
reduction = 17
prelu = 18
softmax = 19
layer_normalization = 20

# dnnl_prop_kind_t
forward_training = 64
forward_inference = 96
backward = 128
backward_data = 160
backward_weights = 192

# dnnl_alg_kind_t
convolution_direct = 1
deconvolution_direct = 10
eltwise_relu = 32
eltwise_tanh = 33
eltwise_linear = 38
eltwise_logistic = 41
eltwise_pow = 48
eltwise_exp = 42
eltwise_relu_use_dst_for_bwd = 256
eltwise_tanh_use_dst_for_bwd = 257
eltwise_logistic_use_dst_for_bwd = 260
eltwise_elu = 34
eltwise_soft_relu = 39
eltwise_hardsigmoid = 40
eltwise_gelu_tanh = 43
eltwise_swish = 44
eltwise_clip_v2 = 47
eltwise_gelu_erf = 49
eltwise_mish = 51
eltwise_hardswish = 52
eltwise_elu_use_dst_for_bwd = 258
eltwise_exp_use_dst_for_bwd = 261
eltwise_clip_v2_use_dst_for_bwd = 262
resampling_nearest = 196592
resampling_linear = 196593
reduction_max = 196594
reduction_mean = 196598
pooling_max = 511
pooling_avg_include_padding = 767
pooling_avg_exclude_padding = 1023
softmax_accurate = 196608
softmax_log = 196609
binary_add = 131056
binary_mul = 131057
binary_max = 131058
binary_min = 131059
binary_div = 131060
binary_sub = 131061
binary_ge = 131062
binary_gt = 131063
binary_le = 131064
binary_lt = 131065
binary_eq = 131066
binary_ne = 131067
reduction_sum = 196596

# RNN cells (dnnl_alg_kind_t), directions (dnnl_rnn_direction_t), flags (dnnl_rnn_flags_t)
vanilla_rnn = 8191
vanilla_lstm = 12287
vanilla_gru = 16383
lbr_gru = 20479
unidirectional_left2right = 1
unidirectional_right2left = 2
bidirectional_concat = 3  # both directions, outputs concatenated along channels
bidirectional_sum = 4
rnn_flags_undef = 0
rnn_flags_diff_weights_overwrite = 1  # backward writes weight gradients (default: adds)

# dnnl_normalization_flags_t (batch normalization)
use_global_stats = 0x1
use_scale = 0x2
use_shift = 0x4
fuse_norm_relu = 0x8

# dnnl_query_t
query_primitive_kind = 2
query_impl_info_str = 8
query_src_md = 129
query_diff_src_md = 130
query_weights_md = 131
query_diff_weights_md = 132
query_dst_md = 133
query_diff_dst_md = 134
query_workspace_md = 135
query_scratchpad_md = 136
query_exec_arg_md = 255  # the descriptor of an execution argument (index: its ARG_*)
query_ndims_s32 = 256
query_dims = 257
query_data_type = 258
query_submemory_offset_s64 = 259
query_format_kind = 262

# engine, stream, attributes
cpu = 1
stream_in_order = 1
scratchpad_mode_library = 0
scratchpad_mode_user = 1
fpmath_mode_strict = 0
fpmath_mode_bf16 = 1

# execution argument indices (DNNL_ARG_*)
ARG_SRC = 1
ARG_SRC_1 = 2
ARG_DST = 17
ARG_MULTIPLE_SRC = 1024  # + i for the i-th input of a sum
ARG_WEIGHTS = 33
ARG_BIAS = 41
ARG_WORKSPACE = 64
ARG_SCRATCHPAD = 80
ARG_DIFF_SRC = 129
ARG_DIFF_DST = 145
ARG_DIFF_WEIGHTS = 161
ARG_DIFF_BIAS = 169
ARG_MEAN = 49
ARG_VARIANCE = 50
ARG_SCALE = 51
ARG_SHIFT = 52
ARG_DIFF_SCALE = 255
ARG_DIFF_SHIFT = 256
ARG_FROM = 1
ARG_TO = 17
ARG_ATTR_MULTIPLE_POST_OP_BASE = 32768  # (index + 1) * this | ARG_SRC_1: binary post-op
ARG_SRC_LAYER = 1       # RNN arguments
ARG_SRC_ITER = 2
ARG_SRC_ITER_C = 3
ARG_DST_LAYER = 17
ARG_DST_ITER = 18
ARG_DST_ITER_C = 19
ARG_WEIGHTS_LAYER = 33
ARG_WEIGHTS_ITER = 34
ARG_DIFF_SRC_LAYER = 129
ARG_DIFF_SRC_ITER = 130
ARG_DIFF_SRC_ITER_C = 131
ARG_DIFF_DST_LAYER = 145
ARG_DIFF_DST_ITER = 146
ARG_DIFF_DST_ITER_C = 147
ARG_DIFF_WEIGHTS_LAYER = 161
ARG_DIFF_WEIGHTS_ITER = 162
ARG_ATTR_SCALES = 4096  # | ARG_SRC (or another argument): that argument's scales

MAX_NDIMS = 12

# dnnl_cpu_isa_t (bit masks: an ISA includes every ISA whose bits it contains)
cpu_isa_avx512_core = 0x27
cpu_isa_avx512_core_bf16 = 0xE7
cpu_isa_avx512_core_amx = 0xFEF
