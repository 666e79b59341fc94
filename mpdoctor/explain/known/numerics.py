"""Numerical failures of half precision: a diffusion VAE or UNet overflowing fp16 into NaNs, which Stable
Diffusion web UIs stop on and diffusers turns into a black image with a numpy warning. Nothing raised a
dtype error: fp16's range (largest finite 65504) was too small for an activation."""

from __future__ import annotations

from mpdoctor.explain.signature import Signature, fix

FP16_FIX_VAE = fix(
    "For SDXL, use the VAE finetuned to stay in fp16 range: "
    '`vae = AutoencoderKL.from_pretrained("madebyollin/sdxl-vae-fp16-fix", torch_dtype=torch.float16)`'
    " and pass `vae=vae` to the pipeline"
)

SIGNATURES: list[Signature] = [
    Signature(
        id="numerics-sd-webui-nan-vae",
        family="numerics",
        title="The VAE produced NaNs in fp16 (Stable Diffusion web UI): the decoded image would be black",
        needles=("nans was produced in",),
        patterns=(r"A tensor with (?:all )?NaNs was produced in VAE",),
        cause="The VAE decoder ran in fp16 and an activation overflowed fp16's range: SDXL's original VAE and "
        "several SD 1.x/NAI-based VAEs do this at higher resolutions or in img2img. The web UI "
        "(AUTOMATIC1111, Forge, SD.Next) checks for NaNs and stops, or retries the VAE in fp32 when "
        "'Automatically revert VAE to 32-bit floats' is on.",
        fixes=(
            fix("Run the VAE in fp32: start the web UI with `--no-half-vae` (SD.Next: Settings > CUDA, 'no-half-vae')"),
            fix("Or switch to an fp16-safe VAE (for SDXL: sdxl-vae-fp16-fix) in Settings > Stable Diffusion > SD VAE"),
            fix("Leave `--disable-nan-check` off: it only hides the NaNs, and the image comes out black"),
        ),
        checks=("PREC003",),
        sources=(
            "https://github.com/guoyww/AnimateDiff/issues/307",
            "https://github.com/googlecolab/colabtools/issues/4346",
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/10139",
        ),
        examples=(
            "NansException: A tensor with all NaNs was produced in VAE. This could be because there's not enough "
            "precision to represent the picture. Try adding --no-half-vae commandline argument to fix this. Use "
            "--disable-nan-check commandline argument to disable this check.",
            "A tensor with all NaNs was produced in VAE.\nWeb UI will now convert VAE into 32-bit float and retry.",
        ),
        near_misses=(
            "A tensor with all NaNs was produced in Unet. This could be either because there's not enough "
            "precision to represent the picture, or because your video card does not support half type.",
        ),
    ),
    Signature(
        id="numerics-sd-webui-nan-unet",
        family="numerics",
        title="The UNet produced NaNs in fp16 (Stable Diffusion web UI)",
        needles=("nans was produced in",),
        patterns=(r"A tensor with (?:all )?NaNs was produced in Unet",),
        cause="The UNet's attention overflowed fp16: SD 2.x models and some finetunes need their attention in "
        "fp32, and GTX 16xx cards (and some older ones) compute fp16 wrongly. The web UI checks the UNet's "
        "output for NaNs and stops instead of producing a black image.",
        fixes=(
            fix(
                "Upcast attention: Settings > Stable Diffusion > 'Upcast cross attention layer to float32' (or "
                "start with `--upcast-sampling`)"
            ),
            fix(
                "On a GTX 16xx, or if upcasting does not help, run the model in fp32: `--no-half` (slower, twice "
                "the memory)"
            ),
            fix("Leave `--disable-nan-check` off: it only hides the NaNs"),
        ),
        checks=("PREC003", "GPU003"),
        sources=(
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/12921",
            "https://github.com/Linaqruf/kohya-trainer/issues/37",
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui/pull/6510",
        ),
        examples=(
            "Error Message: NansException: A tensor with all NaNs was produced in Unet. This could be either because "
            "there's not enough precision to represent the picture, or because your video card does not support "
            "half type.",
            "modules.devices.NansException: A tensor with all NaNs was produced in Unet. This could be either "
            "because there's not enough precision to represent the picture, or because your video card does not "
            'support half type. Try setting the "Upcast cross attention layer to float32" option in Settings > '
            "Stable Diffusion or using the --no-half commandline argument to fix this.",
        ),
        near_misses=(
            "NansException: A tensor with all NaNs was produced in VAE. This could be because there's not "
            "enough precision to represent the picture. Try adding --no-half-vae commandline argument to "
            "fix this.",
        ),
    ),
    Signature(
        id="numerics-diffusers-nan-image",
        family="numerics",
        title="diffusers decoded NaNs into an image (a black image): usually an fp16 VAE overflowing",
        needles=('(images * 255).round().astype("uint8")', "image_processor.py"),
        patterns=(
            r"image_processor\.py:\d{1,5}: RuntimeWarning: invalid value encountered in cast",
            r"images = \(images \* 255\)\.round\(\)\.astype\(\"uint8\"\)",
        ),
        cause="numpy warns while turning the decoded latents into 8-bit pixels because they are NaN, and NaN "
        "pixels save as black. The VAE decode overflowed fp16 (SDXL's original VAE always can; SD3/Flux "
        "tiny VAEs and some LoRAs too), or the UNet/transformer produced NaNs earlier in fp16.",
        fixes=(
            FP16_FIX_VAE,
            fix(
                "Or decode in fp32: `pipe.vae.to(torch.float32)` (older pipelines: `pipe.upcast_vae()`), or keep "
                "`force_upcast=True` in the VAE config"
            ),
            fix(
                "If the VAE is already fp32, the NaNs come from the denoiser: load it in bf16 on Ampere or newer "
                "(`torch_dtype=torch.bfloat16`), or in fp32"
            ),
        ),
        checks=("PREC003",),
        sources=(
            "https://github.com/huggingface/diffusers/issues/4325",
            "https://github.com/zai-org/CogView4/issues/14",
        ),
        examples=(
            "site-packages/diffusers/image_processor.py:147: RuntimeWarning: invalid value encountered in cast\n"
            '  images = (images * 255).round().astype("uint8")',
            "Black image on SDXL 1.0 + RuntimeWarning: invalid value encountered in cast images = (images * 255)"
            '.round().astype("uint8")',
        ),
    ),
    Signature(
        id="numerics-ultralytics-amp-check-failed",
        family="numerics",
        title="Ultralytics' AMP check failed: fp16 gives wrong results on this GPU, so AMP was turned off",
        needles=("anomalies were detected with amp", "amp checks failed", "gpu may cause nan losses"),
        patterns=(
            r"Anomalies were detected with AMP on your system that may lead to NaN losses",
            r"AMP checks failed\W{0,12}disabling Automatic Mixed Precision",  # YOLOv5's words
            r"AMP training on [^\n]{0,60} GPU may cause NaN losses",  # ultralytics 8.4
        ),
        cause="Before training, YOLOv5/YOLOv8/YOLO11 run a small model with and without AMP and compare the "
        "detections. They differ: GTX 16xx cards (1650/1660) and some Quadro T-series compute fp16 wrongly, "
        "or the CUDA/cuDNN build misbehaves there. Training continues in fp32 (slower, more memory); with "
        "AMP forced on, the losses turn NaN and mAP stays 0.",
        fixes=(
            fix("Let it train in fp32 (`amp=False` is what it chose), or use a GPU whose fp16 works"),
            fix(
                "On a GTX 16xx, a newer driver and torch with another CUDA build sometimes fixes fp16; re-run the "
                "check afterwards"
            ),
        ),
        checks=("PREC003", "PREC001"),
        sources=(
            "https://github.com/ultralytics/ultralytics/issues/1348",
            "https://github.com/ultralytics/ultralytics/pull/17977",
            "https://github.com/ultralytics/yolov5/issues/7908",
            "https://github.com/ultralytics/yolov5/issues/13248",
        ),
        examples=(
            "AMP: running Automatic Mixed Precision (AMP) checks with YOLOv8n...\n"
            "AMP: checks failed . Anomalies were detected with AMP on your system that may lead to NaN losses or "
            "zero-mAP results, so AMP will be disabled during training.",
            "AMP checks failed \u274c, disabling Automatic Mixed Precision.",
        ),
    ),
    Signature(
        id="numerics-nan-image-cast",
        family="numerics",
        title="NaN pixels were cast to 8-bit (a black or blank image): the model overflowed in half precision",
        # numpy's warning itself: the image-scaling line under it (`(img * 255).astype(np.uint8)`) is only where it
        # was cast, and the same line in a traceback's frame is where some other error was raised
        needles=("invalid value encountered in cast",),
        patterns=(r"RuntimeWarning: invalid value encountered in cast",),
        cause="numpy's `invalid value encountered in cast` on the line that turns a float image into 8-bit pixels "
        "means the image held NaN or inf, and they save as black. In a generative pipeline that is almost always "
        "half precision overflowing: a VAE decode in fp16 (fp16's largest value is 65504), or a model swapped "
        "from bf16 to fp16 for an older GPU.",
        fixes=(
            fix("Decode in fp32: move the VAE (or the last stage) out of the autocast region and `.float()` it"),
            fix("On Ampere or newer, run in bf16 instead of fp16; on older GPUs keep the decoder in fp32"),
        ),
        checks=("PREC003",),
        rank=-1,
        sources=("https://numpy.org/doc/stable/reference/generated/numpy.ndarray.astype.html",),
        examples=("RuntimeWarning: invalid value encountered in cast\n  img = (img * 255).astype(np.uint8)",),
        near_misses=(
            "labels = (labels > 0.5).astype(np.uint8)",
            # IDM-VTON#79: the cast's line in a traceback, another error raised on it
            '  File "/home/huishi/workspace/data/repository/IDM-VTON/./src/tryon_pipeline.py", line 955, in '
            "prepare_mask_latents\n    my_masked_image = (masked_image.detach().cpu().squeeze().permute(1, 2, 0)"
            ".numpy() * 255).astype(np.uint8)\nAttributeError: 'NoneType' object has",
        ),
    ),
]
