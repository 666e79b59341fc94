# ruff: noqa: E501  (messages are kept verbatim, one per line, as their threads printed them)
"""Real messages of runs a low precision spoiled (NaNs, overflow, a scaler used out of order), with the threads
they come from: the general numerics, overflow and scaler signatures' examples (``examples.py`` has the others, and
says where they were copied from)."""

SYMPTOMS: dict[str, tuple[tuple[str, str], ...]] = {
    "numerics": (
        (
            "https://github.com/huggingface/diffusers/issues/2153",
            'Python\\Python310\\lib\\site-packages\\diffusers\\pipelines\\pipeline_utils.py:818: RuntimeWarning: invalid value encountered in cast\nimages = (images * 255).round().astype("uint8")',
        ),
        (
            "https://github.com/WongKinYiu/yolov7/issues/834",
            "AMP: checks failed X, disabling Automatic Mixed Precision.",
        ),
        (
            "https://github.com/modelscope/FunASR/issues/1889",
            "使用官方示例代码推理，当使用Fp16的时候，前向出现Nan\n\n前向推理在sanm/encoder.py的forward会出现Nan，如果使用Fp32则无问题",
        ),
        (
            "https://github.com/clue-ai/ChatYuan/issues/58",
            "您好，我在尝试微调过程中开启FP16加速训练 ，但loss一直为nan，想问下您如何使用FP16微调chatyuan，感谢！",
        ),
        (
            "https://github.com/NVlabs/MambaVision/issues/38",
            "I've encountered an issue with NaN losses when using AMP in MambaVision, particularly when I reduce the training epochs to 30. The problem seems to stem from the `selective_scan_fn` function. I've tried switching to float32 for training, which resolves the NaN issue, but this approach is more resource-intensive compared to using AMP.",
        ),
        (
            "https://github.com/pytorch/xla/issues/4152",
            "When running HuggingFace BERT (any size) fine-tuning tutorial with transformers version >= 4.21.0 and using XLA_USE_BF16=1, I see NaNs in the loss after the first step. The issue is seen also with XLA_DOWNCAST_BF16=1.",
        ),
        (
            "https://github.com/facebookresearch/segment-anything/issues/540",
            "Has anyone managed to convert the model to FP16 (half precision) successfully?\nThe encoder (ViT-H) outputs garbage in this case.",
        ),
        (
            "https://github.com/hzwer/ECCV2022-RIFE/issues/188",
            "When interpolating resolutions larger than FullHD (WQHD or UHD) in fp16 mode, i'm getting strange errors on the right half and the bottom of the interpolated frames (see example). The parsed, original frames are ok. Without fp16 or smaller resolutions everything is ok, too. I tested a bit and the error seems to occur for every pixel with one of its indices greater than 2000.",
        ),
        (
            "https://github.com/km2ii/JVP_TG-PLUS/issues/96",
            "When the fp16 option is set to `true` and the `basicVSR-pp-8x-std` Model is used, all resulting images are just black.",
        ),
        (
            "https://github.com/hzwer/ECCV2022-RIFE/issues/116",
            'I\'ve noticed some "shaking" issue when interpolating with half-precision mode\n[fp32](https://drive.google.com/file/d/1GhlVRuCaGUGz1KT-DOL9Q2-VN399NbUn/view)\n[fp16](https://drive.google.com/file/d/1MTbrhKJGKBdlJ1ts22oks5zYkolG3quN/view) (the text is a still image, but is flickering in fp16 mode)',
        ),
        (
            "https://github.com/NVIDIA-AI-IOT/torch2trt/issues/395",
            "I got wrong output when fp16_mode is True",
        ),
        (
            "https://github.com/openai/CLIP/issues/222",
            "output\n```\ntensor([[nan, nan, nan, nan, nan, nan, nan]], device='cuda:0',\n       dtype=torch.float16)\n[nan nan nan nan nan nan nan]\n```\nCLIP can output the probability normally when using CPU.",
        ),
        (
            "https://github.com/huggingface/transformers/issues/33294",
            '"Qwen2-VL FP16 inference results in errors or gibberish output."',
        ),
        (
            "https://github.com/jzhang38/TinyLlama/issues/32",
            "model = model.half()\n```\nIt now fits on my gpu, but the training loss becomes 0 after a single batch, and the evaluation loss is nan.\nI tried to check the predictions of the model after training, but its output contains nan so it does not work.",
        ),
        (
            "https://github.com/Nota-NetsPresso/shortened-llm/pull/9",
            "## Changes\n* Use `model.bfloat16()` to avoid NaN in logit values of LLaMA-2",
        ),
        (
            "https://github.com/PixArt-alpha/PixArt-sigma/issues/88",
            "Hi there. Thanks for caring. The unstable problem is due to fp16 attention in Transformer2DModel when we train on 1024px images or larger. Do you have any insight on this one?",
        ),
    ),
    "overflow": (
        (
            "https://github.com/NVIDIA/apex/issues/1105",
            "RuntimeError: value cannot be converted to type at::Half without overflow: -1e+10",
        ),
        (
            "https://github.com/hiyouga/LlamaFactory/issues/251",
            '  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/fp16/loss_scaler.py", line 175, in update_scale\n    raise Exception(\nException: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.',
        ),
        (
            "https://github.com/NVIDIA/apex/issues/834",
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4.0\nGradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 2.0\nGradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 1.0\nGradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.5",
        ),
        (
            "https://github.com/deepinsight/insightface/issues/2262",
            "Training: 2023-03-14 09:08:43,293-Speed 2178.40 samples/sec   Loss nan   LearningRate 0.001000   \nEpoch: 0   Global Step: 20   Fp16 Grad Scale:  0   Required: 194 hours\nTraining: 2023-03-14 09:08:47,984-Speed 2183.37 samples/sec   Loss nan   LearningRate 0.001000   Epoch: 0   Global Step: 30   Fp16 Grad Scale:  0   Required: 144 hours",
        ),
        (
            "https://github.com/openai/guided-diffusion/issues/50",
            "Found NaN, decreased lg_loss_scale to -16199.354\nFound NaN, decreased lg_loss_scale to -16200.354\nFound NaN, decreased lg_loss_scale to -16201.354\nFound NaN, decreased lg_loss_scale to -16202.354",
        ),
        (
            "https://github.com/JunnYu/GAU-alpha-pytorch/issues/1",
            "半精度overflow\n\n半精度训练的时候，这里会报overflow问题。我又去翻了你roformer的mask代码，那里attention mask的是-10000",
        ),
    ),
    "scaler": (
        ("https://github.com/GaParmar/img2img-turbo/issues/18", "ValueError: Attempting to unscale FP16 gradients."),
        (
            "https://github.com/huggingface/pytorch-image-models/issues/1712",
            "AttributeError: module 'torch' has no attribute 'autocast'",
        ),
        (
            "https://github.com/open-mmlab/OpenPCDet/pull/1247",
            "I received this error: `AttributeError: module 'torch.amp' has no attribute 'cuda'`. Is it supposed to be `torch.cuda.amp.custom_fwd` here instead of `torch.amp.cuda.custom_fwd`?",
        ),
    ),
}
