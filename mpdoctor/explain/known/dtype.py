"""Dtype mismatches inside one op: fp16/bf16 tensors meeting fp32 ones in a matmul, a convolution,
scaled_dot_product_attention, a norm on the CPU or an RNN, in every wording torch has used.

Each pattern needs a half-precision dtype (Half or BFloat16) on one side, so a float32/float64 mix-up
(numpy data) or an integer index/target is not taken for a precision problem. The older torch 1.0-1.5
phrasings are in dtype_legacy.py; updates and writes (index_put, optimizers, embeddings) in
dtype_updates.py.
"""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import (
    AUTOCAST,
    CAST_INPUTS,
    DTYPE_TRACE,
    FULL,
    FULL_CPP,
    FULL_DTYPE,
    HALF,
    HALF_CPP,
    HALF_DTYPE,
    STRAY_APEX,
    SWAPPED_KERNEL_FRAMES,
    TENSOR_PREFIX,
)
from mpdoctor.explain.signature import Signature, fix

SIGNATURES: list[Signature] = [
    Signature(
        id="dtype-expected-scalar-type",
        family="dtype",
        title="An op got tensors of two floating dtypes (fp16/bf16 meeting fp32)",
        needles=("expected scalar type",),
        patterns=(
            # not `\b`: a markdown paste closes its italics right after the dtype ("_... but found Half_")
            rf"(?:expected|Expected) scalar type {HALF} but found (?:{FULL}|{HALF})(?![a-z0-9])",
            rf"(?:expected|Expected) scalar type {FULL} but found {HALF}(?![a-z0-9])",
        ),
        cause="Part of the model or its inputs stayed in fp32 while the rest is fp16/bf16 (or the reverse), and an "
        "op that needs one dtype received both: linear, conv, bmm/einsum, LSTM cells, layer_norm weights. "
        "Usually a `.half()` model fed fp32 inputs, an fp32 buffer or mask created without a dtype, or a "
        "layer kept in fp32 outside autocast. A custom CUDA extension (DCN, linear attention) that only "
        "has an fp32 kernel raises it too when autocast hands it fp16.",
        fixes=(
            AUTOCAST,
            CAST_INPUTS,
            fix(
                "For a custom CUDA extension without half kernels, run it in fp32: decorate its forward with "
                '`@torch.autocast("cuda", enabled=False)` and call it on `x.float()`'
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007", "APEX007"),
        sources=(
            "https://github.com/pytorch/pytorch/issues/42358",
            "https://github.com/pytorch/pytorch/issues/45048",
            "https://github.com/mosaicml/llm-foundry/issues/333",
            "https://github.com/axolotl-ai-cloud/axolotl/issues/473",
        ),
        examples=(
            "RuntimeError: expected scalar type Float but found Half",
            "~/miniconda3/lib/python3.7/site-packages/torch/nn/modules/rnn.py in forward(self, input, hx)\n"
            "    967             input, hx,\n"
            "    968             self.weight_ih, self.weight_hh,\n"
            "--> 969             self.bias_ih, self.bias_hh,\n"
            "    970         )\n"
            "\n"
            "RuntimeError: expected scalar type Half but found Float",
            "RuntimeError: expected scalar type BFloat16 but found Float",
            "RuntimeError: expected scalar type Float but found BFloat16",
            "[rank0]: RuntimeError: expected scalar type Half but found Float",
        ),
        near_misses=(
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x16 and 8x16)",
            "RuntimeError: expected scalar type Long but found Float",  # integer target/index, pytorch#118280
            "Why Error RuntimeError: expected scalar type Float but found Double ???",  # float64 data, not AMP
            # the same message from apex's fused RMSNorm is apex-fused-norm-dtype (xdit-project/xDiT#226)
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/apex/normalization/fused_layer_norm.py", line 75, '
            "in forward\n"
            "    output, invvar = fused_layer_norm_cuda.rms_forward_affine(\n"
            "RuntimeError: expected scalar type Float but found Half",
        ),
        not_frames=SWAPPED_KERNEL_FRAMES,
        alternatives=(STRAY_APEX,),
        notes="The message names the dtype the kernel was dispatched for first and the stray tensor second, but "
        "which of the two is the input depends on the op; the cure is the same either way.",
    ),
    Signature(
        id="dtype-matmul-mismatch",
        family="dtype",
        title="A matmul/linear/addmm got fp16/bf16 on one side and fp32 on the other",
        needles=("to have the same dtype, but got:", "must have the same dtype, but got"),
        patterns=(
            rf"expected (?:mat1 and mat2|m1 and m2|self and mat2) to have the same dtype, but got: ?"
            rf"(?:{HALF_CPP} ?!= ?(?:{HALF_CPP}|{FULL_CPP})|{FULL_CPP} ?!= ?{HALF_CPP})\b",
            rf"(?:mat1 and mat2|self and mat2) must have the same dtype, but got (?:{HALF} and (?:{HALF}|{FULL})|{FULL} "
            rf"and {HALF})\b",
        ),
        cause="A linear layer, `addmm`, `mm` or `@` received an fp32 activation and fp16/bf16 weights (or the "
        "reverse). Typical: a model loaded with `torch_dtype=torch.float16` fed fp32 features (an image "
        "encoder, a timestep embedding, a LoRA/adapter kept in fp32), or a matmul written outside autocast. "
        "torch 2.x words it by kernel: `expected m1 and m2` (CPU mm), `expected mat1 and mat2` (CUDA/XPU "
        "addmm), `mat1 and mat2 must have`/`self and mat2 must have` (addmm/linear with bias).",
        fixes=(
            AUTOCAST,
            CAST_INPUTS,
            fix(
                "For an adapter or extra projection created after loading (LoRA, IP-Adapter, a new head), move it "
                "to the base model's dtype: `adapter.to(dtype=base_model.dtype)`"
            ),
            fix(
                "On a box with different GPUs, make sure `cuda:0` is the card you meant: CUDA numbers the "
                "fastest first, nvidia-smi by PCI bus, and an older card takes another precision path",
                "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007", "GPU001", "GPU002", "GPU003"),
        sources=(
            "https://github.com/hiyouga/LlamaFactory/issues/567",
            "https://github.com/cubiq/ComfyUI_IPAdapter_plus/issues/140",
            "https://github.com/Comfy-Org/ComfyUI/issues/4684",
            "https://github.com/OpenBMB/MiniCPM-V/issues/234",
            "https://github.com/pytorch/pytorch/issues/165718",
        ),
        examples=(
            "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: float != c10::Half",
            "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: struct c10::Half != float",
            "[2024-08-30 06:31] ERROR glora clip_g.transformer.text_model.encoder.layers.27.self_attn.out_proj.weight "
            "expected m1 and m2 to have the same dtype, but got: c10::Half != float",
            "I got RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half",
            "RuntimeError: self and mat2 must have the same dtype, but got Half and Float",
        ),
        near_misses=(
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x128 and 64x128)",
            # fp8-stored weights used without an upcast: the node/loader is too old, not a mixed-precision cast
            "RuntimeError: mat1 and mat2 must have the same dtype, but got Half and Float8_e4m3fn",
        ),
    ),
    Signature(
        id="dtype-conv-input-weight-type",
        family="dtype",
        title="A convolution's input and weight (or bias) are in different precisions",
        needles=("and weight type (", "and bias type ("),
        patterns=(
            rf"Input type \({TENSOR_PREFIX}({HALF})Tensor\) and (?:weight|bias) type \({TENSOR_PREFIX}(?!\1Tensor)(?:{HALF}|{FULL})Tensor\)",
            rf"Input type \({TENSOR_PREFIX}{FULL}Tensor\) and (?:weight|bias) type \({TENSOR_PREFIX}{HALF}Tensor\)",
            rf"Input type \((?:struct )?c10::({HALF})\) and (?:weight|bias) type \((?!(?:struct )?c10::\1\))"
            rf"(?:{HALF_CPP}|{FULL_CPP})\)",
            rf"Input type \({FULL_CPP}\) and (?:weight|bias) type \({HALF_CPP}\)",
            # ATen's type names for the input (torch 1.x): `CUDABFloat16Type` against a HalfTensor weight
            rf"Input type \((?:CUDA|CPU)?(?:{HALF}Type\) and (?:weight|bias) type \({TENSOR_PREFIX}(?:{HALF}|{FULL})Tensor"
            rf"|{FULL}Type\) and (?:weight|bias) type \({TENSOR_PREFIX}{HALF}Tensor)\)",
        ),
        cause="`conv1d/2d/3d` (or a transposed conv) got an fp16/bf16 input with fp32 weights, or the reverse. "
        "Usually a VAE, ControlNet or image encoder left in fp32 next to an fp16 UNet, latents produced in "
        "fp32 and fed to an fp16 model, or a model run on CPU in fp16. The older form names tensor types "
        "(`torch.cuda.HalfTensor`); torch 2.x checks the bias separately and names dtypes (`c10::Half`, "
        "`struct c10::Half` on Windows).",
        fixes=(
            AUTOCAST,
            fix("Or cast the input to the conv's own dtype: `x = x.to(conv.weight.dtype)`"),
            fix(
                "Load every sub-model (VAE, ControlNet, text/image encoders) in the same dtype, e.g. one "
                "`torch_dtype=torch.float16` for the whole pipeline, or `pipe.to(torch.float16)`"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/Yu-Fangxu/COLD-Attack/issues/20",
            "https://github.com/LeapLabTHU/ACmix/issues/15",
            "https://github.com/zai-org/CogVLM/issues/282",
            "https://github.com/lshqqytiger/stable-diffusion-webui-amdgpu/issues/564",
            "https://github.com/vladmandic/sdnext/issues/1431",
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui-feature-showcase/issues/24",
            "https://github.com/fpgaminer/joycaption/issues/3",
            "https://github.com/ayooshkathuria/pytorch-yolo-v3/issues/7",
        ),
        examples=(
            "RuntimeError: Input type (CUDAFloatTensor) and weight type (CUDAHalfTensor) should be the same",
            '  File "/GitHub/COLD-Attack/bleuloss.py", line 47, in batch_log_bleulosscnn_ae\n'
            "    term = nn.functional.conv2d(out, eye_filter)/ngram\n"
            "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be "
            "the same",
            "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.HalfTensor) should be the same or "
            "input should be a MKLDNN tensor and weight is a dense tensor",
            "3. Input type (c10::Half) and bias type (float) should be the same",
            "    RuntimeError: Input type (float) and bias type (struct c10::Half) should be the same",
            "[Issue]: Input type (c10::BFloat16) and bias type (c10::Half) should be the same",
            "`RuntimeError: Input type (CUDABFloat16Type) and weight type (torch.cuda.HalfTensor) should be the same`",
        ),
        near_misses=(
            # device mismatches worded the same way: one tensor on the CPU, the other on the GPU
            "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
            "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.HalfTensor) should be the same",
            # float64 numpy data, not a precision mix
            "RuntimeError: Input type (torch.cuda.DoubleTensor) and weight type (torch.cuda.FloatTensor) should be "
            "the same",
        ),
    ),
    Signature(
        id="dtype-tensor-arg-same-type",
        family="dtype",
        title="A cuDNN/ATen argument check found fp16 and fp32 tensors in one call",
        needles=("to have the same type as tensor for argument",),
        patterns=(
            rf"to have the same type as tensor for argument #\d{{1,2}} '\w{{1,40}}'; but type {TENSOR_PREFIX}"
            rf"(?:{HALF}Tensor does not equal {TENSOR_PREFIX}{FULL}Tensor|{FULL}Tensor does not equal {TENSOR_PREFIX}{HALF}Tensor)",
        ),
        cause="cuDNN convolution/batch-norm (or an extension op such as torchvision's roi_align, deformable conv) "
        "checks that all its tensors share one type, and one of them is fp16 while another is fp32: the "
        "input against the weight, the incoming gradient against the weight in backward, or features "
        "against fp32 boxes. It is torch 1.x wording for the same mix as the conv input/weight check.",
        fixes=(
            AUTOCAST,
            fix(
                "Or cast the odd tensor to the others' dtype before the call (the boxes/offsets to the features' "
                "dtype: `rois.to(features.dtype)`)"
            ),
            fix(
                "If it appears in backward (`grad_output`), the forward mixed dtypes: cast the layer's output "
                "back explicitly instead of mixing `.half()` and fp32 modules"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/GVCLab/PersonaLive/issues/42",
            "https://github.com/jik876/hifi-gan/issues/44",
            "https://github.com/NVIDIA/apex/issues/832",
        ),
        examples=(
            "RuntimeError: Expected tensor for argument #1 'input' to have the same type as tensor for argument "
            "#2 'weight'; but type torch.cuda.FloatTensor does not equal torch.cuda.HalfTensor",
            "RuntimeError: Expected tensor for argument #1 'grad_output' to have the same type as tensor for "
            "argument #2 'weight'; but type torch.cuda.HalfTensor does not equal torch.cuda.FloatTensor (while "
            "checking arguments for cudnn_convolution_backward_input)",
            "Expected tensor for argument #1 'input' to have the same type as tensor for argument #2 'rois'; but "
            "type torch.cuda.HalfTensor does not equal torch.cuda.FloatTensor",
        ),
        near_misses=(
            "RuntimeError: Expected tensor for argument #1 'input' to have the same device as tensor for argument "
            "#2 'weight'; but device 1 does not equal 0 (while checking arguments for cudnn_convolution)",
        ),
    ),
    Signature(
        id="dtype-sdpa-qkv-mismatch",
        family="dtype",
        title="scaled_dot_product_attention got query/key/value (or its mask) in different precisions",
        needles=("expected query, key, and value to have the same dtype", "expected attn_mask dtype to be bool"),
        patterns=(
            rf"Expected query, key, and value to have the same dtype, but got query\.dtype: [^\n]{{0,160}}{HALF}",
            # a floating mask only: an integer mask (`long int`) is not a precision problem
            rf"Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask\.dtype: "
            rf"(?:{HALF_CPP}|{FULL_CPP} and {{1,2}}query\.dtype: {HALF_CPP})",
        ),
        cause="`F.scaled_dot_product_attention` needs query, key and value in one dtype, and a float mask in the "
        "query's dtype. One of them came from an fp32 path (an fp32 key/value projection, a KV cache "
        "allocated in fp32, an IP-Adapter or style module that builds its own k/v, a mask made in bf16 "
        "for an fp16 model). Plain attention written with `matmul` would have raised a mat1/mat2 error "
        "instead.",
        fixes=(
            AUTOCAST,
            fix(
                "Or cast key, value and mask to the query's dtype right before the call: `k, v = k.to(q.dtype), "
                "v.to(q.dtype)`; `attn_mask = attn_mask.to(q.dtype)` (or a bool mask)"
            ),
            fix("Allocate caches and masks with the model's dtype: `torch.zeros(..., dtype=model.dtype)`"),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/10853",
            "https://github.com/nari-labs/dia/issues/158",
            "https://github.com/nari-labs/dia/pull/45",
            "https://github.com/Mikubill/sd-webui-controlnet/issues/2208",
            "https://github.com/Comfy-Org/ComfyUI/issues/8118",
        ),
        examples=(
            "RuntimeError: Expected query, key, and value to have the same dtype, but got query.dtype: float "
            "key.dtype: float and value.dtype: struct c10::Half instead.",
            "Inference failed: Expected query, key, and value to have the same dtype, but got query.dtype: float, "
            "key.dtype: struct c10::Half, and value.dtype: struct c10::Half instead.",
            "Error during inference: Expected query, key, and value to have the same dtype, but got query.dtype: "
            "c10::BFloat16 key.dtype: float and value.dtype: float instead.",
            "RuntimeError: Expected query, key, and value to have the same dtype, but got query.dtype: c10::Half "
            "key.dtype: float and value.dtype: float instead.",
            "!!! Exception during processing !!! Expected attn_mask dtype to be bool or float or to match query "
            "dtype, but got attn_mask.dtype: struct c10::BFloat16 and  query.dtype: struct c10::Half instead.",
        ),
        near_misses=(
            # xformers' attention: a device mismatch between the bias and q/k/v (mistral-inference#215)
            "ValueError: Attention bias and Query/Key/Value should be on the same device",
        ),
        notes="Also an attention failure; kept here because the cure is the dtype fix, not a different kernel.",
    ),
    Signature(
        id="dtype-norm-mixed-cpu",
        family="dtype",
        title="A norm on CPU got parameters in a dtype its mixed-precision CPU kernel does not take",
        needles=("mixed dtype (cpu)",),
        patterns=(
            r"mixed dtype \(CPU\): (?:expect parameter to have scalar type of Float|expect input to have "
            r"scalar type of BFloat16|all inputs must share same datatype)",
        ),
        cause="On the CPU, layer_norm/group_norm/batch_norm accept mixed dtypes in one combination only: a "
        "bf16/fp16 input with fp32 weight and bias. fp16/bf16 norm weights with an fp32 input (a `.half()` "
        "model fed fp32 data), or fp16 weights with a bf16 input, raise this. It mostly means an fp16 model "
        "is running on the CPU, often because CUDA silently fell back to CPU.",
        fixes=(
            fix(
                "If the model was meant to run on the GPU, make CUDA work first (`mpdoctor check` TORCH005/"
                "TORCH009): fp16 on CPU is slow and partly unsupported"
            ),
            fix(
                "On CPU, run in fp32: `model.float()` and fp32 inputs; or bf16 via "
                '`with torch.autocast("cpu", dtype=torch.bfloat16):` with the model left in fp32'
            ),
            fix("Or keep the norm layers in fp32 and cast only their input: `norm(x.to(norm.weight.dtype))`"),
            DTYPE_TRACE,
        ),
        checks=("TORCH009", "TORCH005"),
        sources=(
            "https://github.com/Kosinkadink/ComfyUI-AnimateDiff-Evolved/issues/535",
            "https://github.com/Comfy-Org/ComfyUI-Manager/issues/618",
            "https://github.com/Nerogar/OneTrainer/issues/655",
            "https://github.com/pytorch/pytorch/blob/1b016ba8d368bcf13f4d5aa8221183c8176dc19d/aten/src/ATen/"
            "native/cpu/mixed_data_type.h",
        ),
        examples=(
            '  File "E:\\comfyUI\\ComfyUI_windows_portable_nvidia\\ComfyUI_windows_portable\\python_embeded\\Lib\\'
            'site-packages\\torch\\nn\\functional.py", line 2910, in layer_norm\n'
            "    return torch.layer_norm(\n"
            "           ^^^^^^^^^^^^^^^^^\n"
            "RuntimeError: mixed dtype (CPU): expect parameter to have scalar type of Float",
            "[Bug]: RuntimeError: mixed dtype (CPU): expect parameter to have scalar type of Float",
            "RuntimeError: mixed dtype (CPU): expect input to have scalar type of BFloat16/Half",
            "RuntimeError: mixed dtype (CPU): all inputs must share same datatype.",
        ),
        near_misses=(
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when "
            "checking argument for argument weight in method wrapper_CUDA__native_layer_norm)",
        ),
        notes="Overlaps cpu-half: it is also an fp16-on-CPU failure, but the message is a dtype mix.",
    ),
    Signature(
        id="dtype-rnn-input-parameter",
        family="dtype",
        title="An RNN/LSTM/GRU got input in another precision than its weights",
        needles=(
            "input and parameter tensors are not the same dtype",
            "input must have the type torch.",
            "rnn input dtype (torch.",
        ),
        patterns=(
            rf"Input and parameter tensors are not the same dtype, found input tensor with (?:{HALF} and "
            rf"parameter tensor with {FULL}|{FULL} and parameter tensor with {HALF})\b",
            rf"input must have the type torch\.(?:{HALF_DTYPE}, got type torch\.(?:{FULL_DTYPE}|{HALF_DTYPE})|{FULL_DTYPE}, got type "
            rf"torch\.{HALF_DTYPE})\b",
            rf"RNN input dtype \(torch\.(?:{HALF_DTYPE}\) does not match weight dtype \(torch\.(?:{FULL_DTYPE}|{HALF_DTYPE})|"
            rf"{FULL_DTYPE}\) does not match weight dtype \(torch\.{HALF_DTYPE})\)",
        ),
        cause="`nn.LSTM`/`nn.GRU`/`nn.RNN` need the input, the initial hidden state and the flat weights in one "
        "dtype, and (unlike linear or conv) outside autocast torch checks it up front. The RNN was "
        "converted (`.half()`, `.to(torch.bfloat16)`, TensorRT in fp16) but its input or hidden state was "
        "left fp32, or an fp16/bf16 activation from the layers before reaches an fp32 RNN. torch words it "
        "in Python since 2.1 (`input must have the type`, later `RNN input dtype ... does not match "
        "weight dtype`); cuDNN's own check says `Input and parameter tensors are not the same dtype`.",
        fixes=(
            fix(
                "Run the RNN under autocast, which casts input, hidden state and weights per call (the check is "
                'skipped inside autocast): `with torch.autocast("cuda", dtype=torch.float16):`'
            ),
            fix(
                "Or cast the input and the initial hidden state to the RNN's dtype: `x = x.to(rnn.weight_ih_l0.dtype)`"
            ),
            DTYPE_TRACE,
        ),
        checks=("PREC007",),
        sources=(
            "https://github.com/pytorch/TensorRT/issues/2666",
            "https://github.com/pytorch/pytorch/blob/e75c5e88bc273d106e7d4275a2d8daa7230675cc/test/test_autocast.py",
        ),
        examples=(
            "`RuntimeError: Input and parameter tensors are not the same dtype, found input tensor with Float and "
            "parameter tensor with Half`",
            "ValueError: input must have the type torch.float16, got type torch.float32",
            "ValueError: input must have the type torch.float32, got type torch.bfloat16",
            "ValueError: RNN input dtype (torch.float16) does not match weight dtype (torch.float32)",
        ),
        near_misses=(
            "Input and parameter tensors are not the same dtype, found input tensor with Double and parameter "
            "tensor with Float",
            # float64 data (numpy) into an fp32 LSTM: not a precision mix
            "ValueError: RNN input dtype (torch.float64) does not match weight dtype",
        ),
    ),
]
