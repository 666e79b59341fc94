# mpdoctor in a known-good reference environment (official PyTorch 2.5.1 / CUDA 12.4
# runtime image, Python 3.11), for checking a host's GPUs and NVIDIA driver:
#
#   docker build -t mpdoctor .
#   docker run --rm --gpus all mpdoctor                    # = mpdoctor check
#   docker run --rm --gpus all mpdoctor check --format json
#   docker run --rm mpdoctor --help
#
# The host needs the NVIDIA driver and the NVIDIA Container Toolkit; the CUDA
# runtime comes from this image. torch is the image's own: mpdoctor does not
# depend on torch, and the install below is constrained to every version already
# in the image, so it only adds packages and never upgrades torch or its deps.
FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime

LABEL org.opencontainers.image.title="mpdoctor" \
      org.opencontainers.image.description="Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups, in a reference PyTorch 2.5.1 + CUDA 12.4 environment" \
      org.opencontainers.image.source="https://github.com/mpdoctor/mpdoctor" \
      org.opencontainers.image.licenses="MIT"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

# README.md* : the package's readme, copied when the checkout has one.
COPY pyproject.toml README.md* /tmp/mpdoctor-src/
COPY mpdoctor/ /tmp/mpdoctor-src/mpdoctor/
COPY checks/ /tmp/mpdoctor-src/checks/
RUN pip list --format=freeze > /tmp/image-constraints.txt \
    && pip install --no-cache-dir --constraint /tmp/image-constraints.txt /tmp/mpdoctor-src \
    && rm -rf /tmp/mpdoctor-src /tmp/image-constraints.txt \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin mpdoctor

# Non-root; NVML and the CUDA device nodes that --gpus mounts are usable by any user.
USER 10001
WORKDIR /home/mpdoctor
ENTRYPOINT ["mpdoctor"]
CMD ["check"]
