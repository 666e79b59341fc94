"""What an op's output may honestly hold: which aten ops only move or alias values, which make masks,
which can underflow. Names only (``aten.mm``, no overload): no torch import here.

The watch measures the floating outputs of every op except those in ``ALIASING`` (views and
metadata: their values are their input's). An output that is ``-inf`` and nothing worse, made by
an op in ``MASKING`` from finite inputs, is an attention mask, not an overflow. Underflow is judged
only for the ops in ``UNDERFLOWING`` and for gradient ops (``*_backward``) other than those in
``HONEST_ZEROS``: their outputs are zero where a value was not only when its magnitude fell below the
dtype's smallest normal number. Sums and differences are not judged: their zeros are cancellation
(a key bias's gradient through a softmax is exactly zero in any precision), not lost range.
"""

from __future__ import annotations

# Outputs that alias an input (views), carry no values of their own, or are bookkeeping.
ALIASING = frozenset(
    {
        "detach",
        "alias",
        "lift_fresh",
        "view",
        "_unsafe_view",
        "reshape",
        "t",
        "transpose",
        "permute",
        "expand",
        "squeeze",
        "unsqueeze",
        "select",
        "slice",
        "as_strided",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "narrow",
        "diagonal",
        "unfold",
        "view_as_real",
        "view_as_complex",
        "_reshape_alias",
        "numpy_T",
        "mT",
        "clone",
        "contiguous",
        "_to_dense",
        "set_",
        "resize_",
        "empty",
        "empty_like",
        "empty_strided",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_empty_strided",
        "zero_",
        "arange",
        "linspace",
        "randn",
        "rand",
        "randn_like",
        "rand_like",
        "normal_",
        "uniform_",
        "randint",
        "bernoulli",
        "bernoulli_",
        "_local_scalar_dense",
        "scalar_tensor",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "is_same_size",
        "_has_compatible_shallow_copy_type",
        "equal",
        "isnan",
        "isinf",
        "isfinite",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_not",
        "logical_and",
        "logical_or",
        "argmax",
        "argmin",
        "_to_copy_bool",
        "nonzero",
        "masked_select",
        "topk",
        "sort",
        "max_pool2d_with_indices",
        "embedding_dense_backward",
    }
)

# Ops whose -inf (and only -inf) output from finite inputs is a mask being written.
MASKING = frozenset(
    {
        "add",
        "add_",
        "sub",
        "sub_",
        "masked_fill",
        "masked_fill_",
        "where",
        "fill",
        "fill_",
        "full",
        "full_like",
        "_to_copy",
        "copy_",
        "clamp",
        "clamp_",
        "minimum",
        "index_put",
        "index_put_",
        "scatter",
        "scatter_",
        "triu",
        "triu_",
        "tril",
        "tril_",
        "cat",
        "stack",
        "constant_pad_nd",
    }
)

# Ops that lose small values to zero when they underflow: products, quotients, casts.
UNDERFLOWING = frozenset(
    {
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "addbmm",
        "mv",
        "addmv",
        "dot",
        "matmul",
        "mul",
        "mul_",
        "div",
        "div_",
        "convolution",
        "_convolution",
        "convolution_backward",
        "_to_copy",
        "copy_",
        "pow",
        "linear",
        "addcmul",
        "addcmul_",
        "sqrt",
        "rsqrt",
    }
)

# Gradient ops whose zeros are by construction (a ReLU's, a mask's, an unused embedding row's).
HONEST_ZEROS = frozenset(
    {
        "threshold_backward",
        "embedding_dense_backward",
        "embedding_backward",
        "masked_fill_backward",
        "max_pool2d_with_indices_backward",
        "native_dropout_backward",
        "hardtanh_backward",
        "index_backward",
        # A tanh's or sigmoid's gradient, grad * (1 - y^2) or grad * y (1 - y), is zero where its output rounded to
        # its bound: saturation, not a small value lost.
        "tanh_backward",
        "sigmoid_backward",
        # A softmax's gradient is zero where it saturated (one-hot attention), in any precision.
        "_softmax_backward_data",
        "_log_softmax_backward_data",
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_cudnn_attention_backward",
    }
)

ATTENTION_OPS = frozenset(
    {
        "bmm",
        "baddbmm",
        "matmul",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_cudnn_attention",
        "scaled_dot_product_attention",
        "_softmax",
        "softmax",
    }
)
SOFTMAX_OPS = frozenset({"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"})
NORM_OPS = frozenset(
    {"pow", "mul", "mean", "var", "var_mean", "sum", "rsqrt", "native_layer_norm", "native_group_norm",
     "native_batch_norm", "_native_batch_norm_legit", "_fused_rms_norm", "add", "sqrt", "div"}
)  # fmt: skip


def op_name(func) -> str:
    """``aten.mm.default`` -> ``mm``: the op's name without namespace or overload."""
    packet = getattr(func, "_opname", None)
    if packet:
        return packet
    return str(func).split(".")[1] if str(func).count(".") >= 2 else str(func)


# Ops whose first tensor argument is added to a product (addmm: bias + x @ w): an output is zero only where the
# term and the product both are, so that term's zeros never explain more than the product's factors do.
ADDITIVE_FIRST = frozenset({"addmm", "baddbmm", "addbmm", "addmv", "addcmul", "addcmul_", "addcdiv"})
ALL, ALL_BUT_FIRST, FIRST_ONLY = 0, 1, 2


def bounding(name: str) -> int:
    """Which inputs' zeros bound an op's honest zeros: ALL; ALL_BUT_FIRST for a term added to a product; FIRST_ONLY
    for a gradient op (``*_backward``), linear in the gradient it is given, its first argument: its other inputs
    (what the forward saved) zero it only where its derivative is zero by construction (``HONEST_ZEROS``)."""
    if name in ADDITIVE_FIRST:
        return ALL_BUT_FIRST
    if name.endswith("_backward") or name.endswith("_backward_data"):
        return FIRST_ONLY
    return ALL


def judges_underflow(name: str) -> bool:
    if name in HONEST_ZEROS:
        return False
    return name in UNDERFLOWING or name.endswith("_backward") or name.endswith("_backward_data")
