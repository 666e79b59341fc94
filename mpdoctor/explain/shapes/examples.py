# ruff: noqa: E501  (messages are kept verbatim, one per line, as their threads printed them)
"""Real messages the general reader was measured on, with the threads they come from: each general signature's
examples (tests/test_explain_shapes.py holds the reader to them). Copied verbatim from held-out rounds 5 to 7,
9 to 15, 17, 18 and 20 (tests/explain_heldout), learned from in issue 38, and from torch's own messages.

Here the families of a precision refused or meeting another (what ``cues.py`` reads); the families of a run the
precision spoiled (NaNs, overflow, a scaler's order, what ``symptoms.py`` reads) are in ``examples_symptoms.py``."""

from mpdoctor.explain.shapes.examples_symptoms import SYMPTOMS

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "apex": (
        (
            "https://github.com/NVIDIA/apex/issues/1314",
            '>>> import apex\n`fused_weight_gradient_mlp_cuda` module not found. gradient accumulation fusion with weight gradient computation disabled.\n>>> import fused_weight_gradient_mlp_cuda\nTraceback (most recent call last):\n  File "<stdin>", line 1, in <module>\nImportError: /opt/spark/python/lib/python3.9/site-packages/fused_weight_gradient_mlp_cuda.cpython-39-x86_64-linux-gnu.so: undefined symbol: _ZN2at4cuda4blas19_cublasGetErrorEnumE14cublasStatus_t',
        ),
        (
            "https://github.com/deepspeedai/DeepSpeed/issues/474",
            "[2020-10-23 09:11:35,886] [WARNING] [stage2.py:32:<module>] apex was installed without --cpp_ext.  Falling back to Python flatten and unflatten.\n[2020-10-23 09:11:35,897] [WARNING] [stage2.py:32:<module>] apex was installed without --cpp_ext.  Falling back to Python flatten and unflatten.\n[2020-10-23 09:11:35,905] [WARNING] [engine.py:48:<module>] Warning:  apex was installed without --cpp_ext.  Falling back to Python flatten and unflatten.",
        ),
        (
            "https://github.com/deepset-ai/haystack/pull/463",
            "RuntimeError: Found param language_model.model.embeddings.word_embeddings.weight with type torch.FloatTensor, expected torch.cuda.FloatTensor.\nWhen using amp.initialize, you need to provide a model with parameters\nlocated on a CUDA device before passing it no matter what optimization level\nyou chose. Use model.to('cuda') to use the default device.",
        ),
        (
            "https://github.com/SeanNaren/deepspeech.pytorch/issues/376",
            '  File "/home/piyush/deepspeech.pytorch/utils.py", line 2, in <module>\n    from apex.fp16_utils import BN_convert_float\nImportError: No module named apex.fp16_utils',
        ),
        (
            "https://github.com/microsoft/Swin-Transformer/issues/17",
            "  File \"main.py\", line 89, in main\n    model, optimizer = amp.initialize(model, optimizer, opt_level=config.AMP_OPT_LEVEL)\nAttributeError: 'NoneType' object has no attribute 'initialize'",
        ),
        (
            "https://github.com/Megvii-BaseDetection/cvpods/issues/61",
            '  File "/home/anaconda3/lib/python3.7/site-packages/apex/amp/handle.py", line 82, in scale_loss\n    raise RuntimeError("Invoked \'with amp.scale_loss`, but internal Amp state has not been initialized.  "\nRuntimeError: Invoked \'with amp.scale_loss`, but internal Amp state has not been initialized.  model, optimizer = amp.initialize(model, optimizer, opt_level=...) must be called before `with amp.scale_loss`',
        ),
    ),
    "attention": (
        (
            "https://github.com/huggingface/transformers/issues/28731",
            "*Model Generate With Bfloat16:* `False (RuntimeError: cutlassF: no kernel found to launch!)`",
        ),
        (
            "https://github.com/NVIDIA/TensorRT-LLM/issues/2855",
            "`[TensorRT-LLM][ERROR] Assertion failed: FP8 FMHA cannot be enabled except on Ada or Hopper or Blackwell Arch. `",
        ),
        (
            "https://github.com/FreedomIntelligence/HuatuoGPT-II/issues/5",
            "与模型交互报错：RuntimeError: cutlassF: no kernel found to launch!",
        ),
        (
            "https://github.com/mistralai/mistral-finetune/issues/79",
            "`flshattF@v2.3.6` is not supported due to requires device with capability > (8, 0) but your GPU has capability (6, 1) (too old)",
        ),
    ),
    "compiler": (
        (
            "https://github.com/pytorch/pytorch/pull/118449",
            "`torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Internal Triton PTX codegen error: \nptxas /tmp/compile-ptx-src-83b319, line 51; error   : Feature '.bf16' requires .target sm_80 or higher\nptxas /tmp/compile-ptx-src-83b319, line 51; error   : Feature 'cvt with .f32.bf16' requires .target sm_80 or higher\nptxas /tmp/compile-ptx-src-83b319, line 59; error   : Feature '.bf16' requires .target sm_80 or higher\nptxas fatal   : Ptx assembly aborted due to errors",
        ),
        (
            "https://github.com/triton-lang/triton/issues/2302",
            "Compilation error message is `AssertionError('Block element type(bf16) and value element type(fp32) mismatch')`",
        ),
        (
            "https://github.com/triton-lang/triton/issues/1360",
            "error: 'llvm.fmul' op requires the same type for all operands and results\nPass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
        ),
        (
            "https://github.com/Joluck/RWKV-PEFT/issues/60",
            "如果使用fla的话，就只能使用float32训练，我的显卡好像不支持bf16计算'.bf16' requires .target sm_80 or higher",
        ),
        (
            "https://github.com/NX-AI/xlstm/issues/50",
            '> /home/chihchieh/.conda/envs/xlstm/lib/python3.11/site-packages/xlstm/blocks/slstm/src/cuda/../util/inline_ops_2bf16.cuh(170): error: no suitable user-defined conversion from "const __nv_bfloat162" to "__half2" exists\n    if (__hbgt2(x, zero)) {\n                ^\n\n/home/chihchieh/.conda/envs/xlstm/lib/python3.11/site-packages/xlstm/blocks/slstm/src/cuda/../util/inline_ops_2bf16.cuh(170): error: no suitable user-defined conversion from "const __nv_bfloat162" to "__half2" exists\n    if (__hbgt2(x, zero)) {\n                   ^',
        ),
    ),
    "cpu-half": (
        (
            "https://github.com/pytorch/pytorch/issues/100565",
            "RuntimeError: Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype",
        ),
        (
            "https://github.com/deepjavalibrary/djl/issues/3707",
            "Failed to convert model: intfloat/multilingual-e5-large-instruct.\nFP16 export is supported only when exporting on GPU. Please pass the option `--device cuda`.",
        ),
        (
            "https://github.com/huggingface/diffusers/pull/749",
            "ValueError: Cannot use `pipeline.to('cpu')` with a pipeline loaded with `torch_dtype=torch.float16` due to the lack of support for `float16` operations on CPU in PyTorch.",
        ),
        (
            "https://github.com/mozilla/TTS/issues/197",
            'RuntimeError: _th_index_select is not implemented for type torch.HalfTensor\n\n  File "/Users/my_user/external_projects/text-to-speech/mozila-tts-wavernn/TTS/models/tacotron2.py", line 43, in inference\n    embedded_inputs = self.embedding(text).transpose(1, 2)',
        ),
        ("https://github.com/CarperAI/trlx/issues/384", "RuntimeError:exp _vml_cpu not implemented for Half"),
        (
            "https://github.com/HillZhang1999/NaSGEC/issues/8",
            "RuntimeError LayerNormKernelImpl not implenmented for half\n\n最新试了试在无GPU的状态下运行两个脚本，出现如上错误。",
        ),
        (
            "https://github.com/neuraloperator/neuraloperator/issues/562",
            "With half-precision tensors, when I update to `torch==2.6`, I see the following error in the spectral conv:\n\n```RuntimeError: MKL FFT doesn't support tensors of type: Half```",
        ),
    ),
    "dtype": (
        (
            "https://github.com/pytorch/TensorRT/issues/2113",
            "Expected input tensors to have type Half, found type float",
        ),
        (
            "https://github.com/pytorch/pytorch/issues/111317",
            "RuntimeError: attempting to assign a gradient with dtype 'c10::BFloat16' to a tensor with dtype 'float'.",
        ),
        (
            "https://github.com/ultralytics/ultralytics/issues/21225",
            "UNAVAILABLE: Invalid argument: unexpected datatype TYPE_FP32 for inference input 'images', expecting TYPE_FP16",
        ),
        (
            "https://github.com/huggingface/transformers/pull/27296",
            "It is not possible to train VideoMAEForPreTraining with bfloat16, because the labels are always stored as float32.",
        ),
        (
            "https://github.com/PaddlePaddle/Paddle-Lite/pull/8718",
            "- .cl kernel 在 mali gpu  上运行在线编译 fp16 精度时，在执行 sqrt 时，由于 var 和 epsilon 的数据类型不一致 ，会报错；",
        ),
        (
            "https://github.com/shibing624/MedicalGPT/issues/108",
            "报错为expected scalar type Half but Float\n sft阶段:\n报错为expected scalar type Half but Float",
        ),
        (
            "https://github.com/tensorflow/model-optimization/issues/409",
            'When using `tf.keras.mixed_precision.experimental.Policy("mixed_float16", loss_scale="dynamic")` the `sparsity.prune_low_magnitude` in tensor type conversion with the error `Tensor conversion requested dtype float32 for Tensor with dtype float16: <tf.Tensor \'pruning_ops/Cast_2:0\' shape=(3, 3, 1, 12) dtype=float16>`.',
        ),
    ),
    "framework": (
        ("https://github.com/Lightning-AI/pytorch-lightning/issues/16011", "RuntimeError('No precision set')"),
        (
            "https://github.com/NVIDIA-NeMo/Speech/issues/8848",
            "Converting Mistral/Mixtral to Nemo format throws error: Received both `precision=bf16-mixed` and `plugins=<...nlp_overrides.PipelineMixedPrecisionPlugin>`",
        ),
        (
            "https://github.com/deepspeedai/DeepSpeed/issues/2734",
            "v0.7.7 gives no errors when using `bf16` with zero-1/2/3 stages. v0.8.0 results in `Model data type and gradient accumulation data type must be equal to use ZeRO`.",
        ),
        (
            "https://github.com/hiyouga/LlamaFactory/issues/710",
            '    assert not(config.bf16 and config.fp16), ("In config, bf16 and fp16 cannot both be true")\nAssertionError: In config, bf16 and fp16 cannot both be true',
        ),
        ("https://github.com/mosaicml/examples/issues/322", "Value bf_16 is not available in Precision"),
        (
            "https://github.com/huggingface/accelerate/issues/1072",
            "----> 4 accelerator = accelerate.Accelerator(fp16=True)\n\nTypeError: __init__() got an unexpected keyword argument 'fp16'",
        ),
        (
            "https://github.com/horovod/horovod/issues/119",
            "  File \"/cm/shared/scratch/centos/benchmarks/scripts/tf_cnn_benchmarks/benchmark_cnn.py\", line 707, in __init__\n    self.model.get_fp16_loss_scale())\nAttributeError: 'ResnetModel' object has no attribute 'get_fp16_loss_scale'",
        ),
        (
            "https://github.com/QwenLM/Qwen/issues/45",
            "    model = AutoModelForCausalLM.from_pretrained(model_path, device_map=\"auto\", trust_remote_code=True, use_bf16=True).eval()\n\n------------------------------------\n\nQWenLMHeadModel.__init__() got an unexpected keyword argument 'use_bf16'",
        ),
        (
            "https://github.com/meta-llama/llama-cookbook/pull/587",
            "This PR changed `--pure_bf16` to `--fsdp_config.pure_bf16` on all related documents, because `--pure_bf16` will give incorrect warning `Warning: unknown parameter pure_bf16` as mentioned in [this issue](https://github.com/meta-llama/llama-recipes/issues/396) .",
        ),
        (
            "https://github.com/ModelCloud/GPTQModel/issues/1976",
            "AttributeError: module 'torch.backends' has no attribute 'fp32_precision'",
        ),
    ),
    "hardware": (
        (
            "https://github.com/kvcache-ai/ktransformers/issues/836",
            "f8e4m3nv is only supported on compute capability >= 90",
        ),
        (
            "https://github.com/meta-pytorch/torchtune/issues/801",
            "RuntimeError: bf16 precision was requested but not available on this hardware. Please use fp32 precision instead.",
        ),
        (
            "https://github.com/intel/intel-extension-for-pytorch/issues/303",
            "error: Double type is not supported on this platform.",
        ),
        (
            "https://github.com/hiyouga/LlamaFactory/issues/4165",
            "+1,昇腾训练报错，RuntimeError: call aclnnCast failed, detail:EZ1001: 2024-06-10-00:01:59.325.061 self not implemented for DT_BFLOAT16, should be in dtype support list [DT_FLOAT16,DT_FLOAT,DT_DOUBLE,DT_INT8,DT_UINT8,DT_INT16,DT_INT32,DT_INT64,DT_UINT16,DT_UINT32,DT_UINT64,DT_BOOL,DT_COMPLEX64,DT_COMPLEX128,].",
        ),
        (
            "https://github.com/microsoft/DirectML/issues/688",
            'Upon attempting to use HuggingFace transformers with dml, I get this error:\n```\n[F302 15:36:01.000000000 dml_util.cc:118] Invalid or unsupported data type BFloat16.\n```\n\nModel config: `"torch_dtype": "bfloat16"`',
        ),
        (
            "https://github.com/EuroEval/EuroEval/issues/864",
            "Hi, not sure whether to post this as a bug or feature request, but as of now,\ngenerative evaluation requires vLLM to run/serve the model. \nThe issue I am facing is that vLLM will not load checkpoints with bfloat16 for these GPUs, but \nthis can be circumvented by telling vLLM to use float16 instead of bfloat16. For vLLM CLI, that's `--dtype=half`",
        ),
    ),
    "kernel-image": (
        (
            "https://github.com/pytorch/pytorch/issues/103973",
            "RuntimeError: Attempting to use hipBLASLt on a unsupported architecture!",
        ),
        (
            "https://github.com/pytorch/ao/issues/2904",
            "ERROR : Arch conditional MMA instruction used without targeting appropriate compute capability. Aborting.\nERROR : Arch conditional MMA instruction used without targeting appropriate compute capability. Aborting.",
        ),
        (
            "https://github.com/lllyasviel/FramePack/issues/731",
            "ASSertionError: SM89 kernel is not available. Make sure you GPUs with compute capability 8.9.\n\nHi, I have installed FramePack through Pinokio.\n\nRTX 5090. Nvidia. \n\nI have tried everything but I keep getting this error when trying to generate a video. No video gets generated, no output.",
        ),
        (
            "https://github.com/AndriiShramko/4DGS-Video-Generator/issues/5",
            "Testing 90 frames on a RTX 5090\n\nFATAL: kernel `fmha_cutlassF_f32_aligned_64x64_rf_sm80` is for sm80-sm100, but was built for sm37",
        ),
        (
            "https://github.com/Tiiny-AI/PowerInfer/issues/108",
            "CUDA error 13 at /home/zilun/PowerInfer/ggml-cuda.cu:9619: invalid device symbol",
        ),
    ),
    "mps": (
        (
            "https://github.com/kijai/ComfyUI-SUPIR/pull/208",
            "input types 'tensor<2x1280xf32>' and 'tensor<1280xf16>' are not broadcast compatible",
        ),
        (
            "https://github.com/Comfy-Org/ComfyUI/issues/11626",
            "KSamplerAdvanced: Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for that dtype",
        ),
        (
            "https://github.com/huggingface/diffusers/issues/2521",
            "loc(\"varianceEps\"(\"(mpsFileLoc): /AppleInternal/Library/BuildRoots/9e200cfa-7d96-11ed-886f-a23c4f261b56/Library/Caches/com.apple.xbs/Sources/MetalPerformanceShadersGraph/mpsgraph/MetalPerformanceShadersGraph/Core/Files/MPSGraphUtilities.mm\":228:0)):\nerror: input types 'tensor<1x77x1xf16>' and 'tensor<1xf32>' are not broadcast compatible",
        ),
        (
            "https://github.com/TissueImageAnalytics/tiatoolbox/issues/1070",
            "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework\ndoesn't support float64. Please use float32 instead.",
        ),
    ),
    "op-support": (
        (
            "https://github.com/microsoft/onnxconverter-common/issues/208",
            "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : Load model from model_fp16.onnx failed:This is an invalid model。类型错误：节点 (Resize__139) 中运算符 (Resize) 的输入参数 (const_empty_float__132) 的类型“tensor(float16 )”无效。",
        ),
        (
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/Dispatch.h",
            "RuntimeError: \"addmm_cuda\" not implemented for 'Float8_e4m3fn'",
        ),
        (
            "https://github.com/microsoft/onnxruntime/issues/26311",
            "onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for MatMul(13) node with name '/blocks.0/slstm_layer/slstm_cell/MatMul'",
        ),
        (
            "https://github.com/pytorch/executorch/issues/7748",
            "[op_native_layer_norm.cpp:169] In function operator()(), assert failed (false): Unhandled dtype Half for native_layer_norm.out",
        ),
        (
            "https://github.com/wangchx67/FourLLIE/issues/15",
            'Excuseme me,when I used the code fft.fft2(),torch.abs(),and torch.angel(),there is a problem "where cuda is not support "complexhalf".So I want to ask how to configure yours envirnoment,and how to solve it? thank you',
        ),
        (
            "https://github.com/tensorflow/tensorflow/issues/56226",
            "Could not find device for node: {{node Cholesky}} = Cholesky[T=DT_HALF]\nAll kernels registered for op Cholesky:\n  device='CPU'; T in [DT_COMPLEX128]\n  device='CPU'; T in [DT_COMPLEX64]\n  device='CPU'; T in [DT_DOUBLE]\n  device='CPU'; T in [DT_FLOAT]\n  device='GPU'; T in [DT_COMPLEX128]\n  device='GPU'; T in [DT_COMPLEX64]\n  device='GPU'; T in [DT_DOUBLE]\n  device='GPU'; T in [DT_FLOAT]\n [Op:Cholesky]",
        ),
        (
            "https://github.com/getkeops/keops/issues/393",
            "I recently encountered an issue where fp16 (half-precision) is no longer supported in the new Python engine of KeOps (my version is 2.2.3). I received the following error:\n```\nValueError: [KeOps] Error : only float and double dtypes are implemented in new python engine for now (error at line 272 in file ...\n```",
        ),
        (
            "https://github.com/jax-ml/jax/issues/2274",
            "```\nkey = jrandom.PRNGKey(0)\nx = jrandom.normal(key, shape=(4,5), dtype=jnp.bfloat16)\n```\n\nResults in \n\n`TypeError: No loop matching the specified signature and casting was found for ufunc nextafter`",
        ),
        (
            "https://github.com/scipy/scipy/issues/7408",
            "In [13]: csr_matrix([[0, 1]], dtype=np.float16).toarray()\n---------------------------------------------------------------------------\nValueError                                Traceback (most recent call last)\n<ipython-input-13-4ee40d9bebcf> in <module>()\n----> 1 csr_matrix([[0, 1]], dtype=np.float16).toarray()\n\n/Users/warren/miniconda3scipy/lib/python3.5/site-packages/scipy-1.0.0.dev0+bad9919-py3.5-macosx-10.6-x86_64.egg/scipy/sparse/compressed.py in toarray(self, order, out)\n    946             y = out.T\n    947         M, N = x._swap(x.shape)\n--> 948         _sparsetools.csr_todense(M, N, x.indptr, x.indices, x.data, y)\n    949         return out\n    950 \n\nValueError: Output dtype not compatible with inputs.",
        ),
        (
            "https://github.com/NVIDIA/CUDALibrarySamples/issues/18",
            "On entry to cusparseConstrainedGeMM_bufferSize(): type of matA/matB (CUDA_R_16F), matC (CUDA_R_16F), compute (-1185136882) is not supported",
        ),
    ),
    "quantization": (
        (
            "https://github.com/OpenNMT/CTranslate2/issues/1351",
            "ValueError: DequantizeGemmOutput: output should have a float type",
        ),
        (
            "https://github.com/lum3on/comfyui_HiDream-Sampler/issues/83",
            "Blockwise quantization only supports 16/32-bit floats, but got torch.uint8",
        ),
        (
            "https://github.com/pytorch/ao/issues/876",
            "Expected Tensor argument scales to have dtype torch.bfloat16, but got torch.float32 instead",
        ),
        (
            "https://github.com/vllm-project/vllm/issues/17579",
            "ERROR 05-02 03:16:53 [multiproc_executor.py:435] AssertionError: float16 is required for MoE compressed models. Set dtype=torch.float16",
        ),
        (
            "https://github.com/google-coral/edgetpu/issues/213",
            "must@must-HP-Z440-Workstation:~/下載/generater/model/save_model/efficientnet$ edgetpu_compiler 224_io.tflite\nEdge TPU Compiler version 14.1.317412892\nInvalid model: 224_io.tflite\nModel not quantized",
        ),
        (
            "https://github.com/IDEA-Research/Rex-Omni/issues/43",
            "AWQ models Both operands must be same dtype. Got fp16 and bf16",
        ),
    ),
    **SYMPTOMS,
}
