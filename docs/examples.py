"""The examples in README.md and docs/*.md, printed by the real CLI from the test fixtures.

Each example in a page sits between two markers::

    <!-- example: NAME -->
    ...generated: the commands, then what mpdoctor printed...
    <!-- /example -->

Regenerate every one of them, after a change to mpdoctor's output or to a fixture::

    python docs/examples.py

``python docs/examples.py --check`` changes nothing and exits 1 naming each stale example;
``tests/test_docs.py`` runs the same comparison. Each command runs as a user's would, ``python -m
mpdoctor`` in a scratch directory holding the fixture snapshot it judges, with stdout piped (so plain text,
no colour, one whole line per fact) and a fixed ``COLUMNS``, so the output is the same on every machine.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
COLUMNS = "100"
REGENERATE = "python docs/examples.py"
MARKER = re.compile(r"<!-- example: (?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- /example -->", re.S)


class Example(NamedTuple):
    args: Tuple[str, ...]  # after `mpdoctor`
    fixtures: Tuple[str, ...] = ()  # catalogue names, written to NAME.json in the scratch directory first
    exits: Tuple[int, ...] = (0,)  # the exit statuses the example may have: anything else is a broken example


EXAMPLES: Dict[str, Example] = {
    "gpu-visible-devices": Example(
        ("check", "--snapshot", "titan-1080ti-visible-devices-1.json"), ("titan-1080ti-visible-devices-1",)
    ),
    "precision-cpu": Example(("check", "--snapshot", "cpu-kernels.json"), ("cpu-kernels",)),
    "precision-busy": Example(
        ("check", "--snapshot", "kernels-cpu-busy.json", "--select", "PREC011"), ("kernels-cpu-busy",)
    ),
    "apex-swapped-norms": Example(
        ("check", "--snapshot", "apex-incident1.json", "--select", "APEX005"), ("apex-incident1",)
    ),
    "oneflow-autocast": Example(
        ("check", "--snapshot", "oneflow-incident2.json", "--select", "ONEFLOW005"), ("oneflow-incident2",), (0, 1)
    ),
    "fleet-compare": Example(
        ("fleet", "compare", "h100-node-healthy.json", "h100-driver-too-old.json"),
        ("h100-node-healthy", "h100-driver-too-old"),
        (0, 1),
    ),
    "explain-one-line": Example(("explain", "RuntimeError: expected scalar type Float but found Half")),
    "rule": Example(("rule", "GPU001")),
    "checks": Example(("checks",)),
}


# What each explain family recognises, for the coverage table (its counts come from the signatures' data).
EXPLAIN_FAMILIES = {
    "dtype": "fp16/bf16 meeting fp32 inside one op (matmul, conv, SDPA, norms, RNNs, writes, optimizer updates), "
    "every torch wording since 0.4, and any message of torch's naming two floating dtypes, in any of its spellings; "
    "ONNX Runtime refusing fp16-converted graphs, FSDP flattening parameters of two dtypes, SyncBatchNorm counts, "
    "any fused kernel (optimizer, RMSNorm, RoPE, GEMM) saying it takes only fp16/bf16, any library's dtype allow-list "
    "(`must be float32 or bfloat16`, `Supported dtypes: ...`, `only bf16 activation is supported`), MPSGraph ops "
    "meeting two element types",
    "cpu-half": "fp16/bf16 ops on the CPU without a kernel, CPU autocast dtypes, oneDNN on CPUs without AVX-512, "
    "any library saying fp16/bf16 is not supported on the CPU (whisper), Ultralytics half export on the CPU, "
    "old torch's unquoted CPU kernel errors, any library saying fp16/fp8 needs a GPU (`requires --use_gpu`, "
    "`without accelerator`), fp16 pipelines and fp8/fp4 models left on the CPU",
    "scaler": "GradScaler misuse: fp16 or bf16 gradients, unscale twice, calls out of order (step twice, unscale_ "
    "after step, no update), a closure, step without scale, no inf checks, no CUDA; torch.amp deprecations "
    "with their replacement call, autocast disabled (no CUDA, dtype not supported on the device), fp16 loss-scale "
    "settings refused (DeepSpeed's `fp16` block, a scaler under bf16)",
    "overflow": "fp16 range: loss scale at minimum or collapsed, constants that do not fit fp16, inf/nan activations",
    "hardware": "bf16/tf32/fp8 refused by the GPU: transformers, accelerate, vLLM, torch.autocast, DeepSpeed, "
    "cuBLAS, Transformer Engine, Triton fp8, Inductor skipping bf16; CTranslate2 compute types (faster-whisper, "
    "whisperX), fp8 without TransformerEngine, any engine saying the hardware has no native fp16 (TensorRT, "
    "Paddle-TRT), AMD GPUs without bf16 instructions, any library requiring a compute capability or a GPU "
    "architecture (Hopper, Blackwell, MI300) for fp8/fp4/bf16",
    "attention": "FlashAttention/xFormers/SDPA refusing the GPU or dtype, extension builds for another torch, "
    "sdp_kernel deprecation, attention bias and mask dtypes, any attention kernel that only takes fp16/bf16 "
    "(transformers' Flash Attention 2 dtype check), each xFormers kernel's refusal",
    "kernel-image": "no kernel image / invalid device function / arch not in the torch build, CUTLASS's "
    "not-implemented MMA stubs (fp8 on a build without sm_89)",
    "apex": "NVIDIA apex builds (no extensions, ABI, missing libraries, no bf16 kernels), "
    "apex.amp removed/stale/deprecated, fused norms swapped in, PyPI's namesake",
    "oneflow": "OneFlow/OneDiff: type inference under torch.autocast, placeholder and incomplete installs, "
    "mock-torch gaps, missing cuDNN/cuBLAS libraries, numpy 2, no kernel for a dtype on the device, dtype checks "
    "failing under OneFlow's autocast, dtype tables of mismatched OneDiff/OneFlow",
    "driver": "driver too old or mismatched, CUDA unknown error, NVML missing, CPU-only torch",
    "framework": "DeepSpeed fp16/bf16 blocks vs HF TrainingArguments, HF Trainer and accelerate device requirements, "
    "Lightning precision values, axolotl and LLaMA-Factory validation, Lightning's 16-mixed to bf16-mixed fallback "
    "on the CPU, TensorRT-RTX precision flags, Accelerate precision recipes and values, DeepSpeed's bf16/fp16 "
    "blocks refusing keys; any library refusing a precision setting's value, precision options that contradict, "
    "a torch or opset too old for a precision, a missing fp8/fp4 kernel package",
    "mps": "Apple MPS: bf16 before macOS 14, float64, ops without half kernels, any op refusing fp16/bf16 on MPS",
    "numerics": "fp16 NaNs: web-UI VAE/UNet NaN checks, diffusers black images, Ultralytics' AMP check, "
    "NaN pixels cast to uint8 in any pipeline, gradients accumulated in bf16, ONNX fp16 conversions that fail "
    "validation",
    "op-support": "ops with no fp16/bf16/fp8 kernel (any torch `not implemented for`), linear algebra and FFT in "
    "half precision, `out=` dtypes, binary_cross_entropy under autocast, LayerNorm bf16 on old CPUs, ONNX ops given "
    "a float16 input their schema refuses, any library saying a feature has no fp8/fp4/fp16 path (`does not support "
    "FP8`, `is not supported for Float8Tensors`)",
    "compiler": "Triton emitting bf16 for pre-Ampere GPUs, tl.dot dtype mixes, loop variables promoted to fp32",
    "quantization": "bitsandbytes compute dtypes (4-bit fp32 compute, 8-bit casts), int8/fp8 weights in a plain "
    "matmul, fp8 `_scaled_mm` layout, shape and scale rules, fp8/fp4 block sizes (`divisible by 16`), a quantized "
    "model cast with `.half()`, quantization that found no Linear layers, a quantized kernel taking only fp16/bf16 "
    "(Marlin, GPTQ, AWQ), a quantization scheme the loader lacks, bit unpacking of packed weights cast to a float "
    "dtype",
}


def explain_coverage() -> str:
    """The table of explain's families with their signature and source counts, from the signatures themselves."""
    sys.path.insert(0, str(ROOT))
    from mpdoctor.explain.known import all_signatures
    from mpdoctor.explain.signature import FAMILIES

    missing = [family for family in FAMILIES if family not in EXPLAIN_FAMILIES]
    if missing:
        raise RuntimeError(f"say what explain family {missing[0]!r} recognises in EXPLAIN_FAMILIES, docs/examples.py")
    signatures = all_signatures()
    lines = ["| family | what it recognises | signatures | sources |", "|---|---|---|---|"]
    for family in FAMILIES:
        own = [s for s in signatures if s.family == family]
        sources = {u for s in own for u in s.sources}
        lines.append(f"| `{family}` | {EXPLAIN_FAMILIES[family]} | {len(own)} | {len(sources)} |")
    lines.append(f"| all | | {len(signatures)} | {len({u for s in signatures for u in s.sources})} |")
    return "\n".join(lines) + "\n"


NUMERICS = ROOT / "docs" / "numerics_examples"


def numerics_cli() -> str:
    """`mpdoctor numerics` on an unchanged fp16 training script: its live line (stderr), the script, the verdict."""
    script = "docs/numerics_examples/t5_overflow.py"
    args = ["numerics", script, "--steps", "3"]
    result = subprocess.run(
        [sys.executable, "-m", "mpdoctor", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=_env()
    )
    if result.returncode != 1:
        raise RuntimeError(f"example numerics-cli: mpdoctor exited {result.returncode}:\n{result.stderr}")
    shown = [f"$ mpdoctor {' '.join(args)}", result.stderr.rstrip("\n"), result.stdout.rstrip("\n"), "$ echo $?", "1"]
    return "```\n" + "\n".join(line.rstrip() for line in "\n".join(shown).splitlines()) + "\n```\n"


def numerics_api(name: str):
    """What docs/numerics_examples/api.py NAME prints: the Python API's own output."""

    def block() -> str:
        result = subprocess.run(
            [sys.executable, str(NUMERICS / "api.py"), name], cwd=ROOT, capture_output=True, text=True, timeout=300,
            env=_env(),
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"example numerics-{name}: api.py failed:\n{result.stderr}")
        return "```\n" + "\n".join(line.rstrip() for line in result.stdout.rstrip("\n").splitlines()) + "\n```\n"

    return block


# Blocks made from mpdoctor's data rather than printed by a command.
TABLES = {
    "explain-coverage": explain_coverage,
    "numerics-cli": numerics_cli,
    "numerics-attention": numerics_api("attention"),
    "numerics-scaler": numerics_api("scaler"),
    "numerics-compare": numerics_api("compare"),
    "numerics-verify": numerics_api("verify"),
}


def _env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPDOCTOR_")}
    env.update(COLUMNS=COLUMNS, NO_COLOR="1", TERM="dumb", PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")
    return env


def _write_fixture(name: str, where: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fixtures" / "catalogue.py"), name, "-o", str(where / f"{name}.json")],
        check=True,
        capture_output=True,
        timeout=120,
        env=_env(),
    )


def render(name: str) -> str:
    """The block for example ``name``: the commands a reader types, then what mpdoctor printed."""
    if name in TABLES:
        return TABLES[name]()
    example = EXAMPLES[name]
    scratch = Path(tempfile.mkdtemp(prefix="mpdoctor-docs-"))
    try:
        lines = []
        for fixture in example.fixtures:
            _write_fixture(fixture, scratch)
            lines.append(f"$ python tests/fixtures/catalogue.py {fixture} -o {fixture}.json")
        result = subprocess.run(
            [sys.executable, "-m", "mpdoctor", *example.args],
            cwd=scratch,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=300,
            env=_env(),
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if result.returncode not in example.exits:
        raise RuntimeError(f"example {name}: mpdoctor exited {result.returncode}:\n{result.stderr}")
    lines.append("$ mpdoctor " + " ".join(shlex.quote(arg) for arg in example.args))
    output = result.stdout.rstrip("\n")
    # Trailing spaces are the table's padding: invisible, and editors strip them.
    output = "\n".join(line.rstrip() for line in output.splitlines())
    return "```\n" + "\n".join(lines) + "\n" + output + "\n```\n"


def blocks(page: Path) -> List[Tuple[str, str]]:
    """(name, current body) of every example block in ``page``."""
    return [(m.group("name"), m.group("body")) for m in MARKER.finditer(page.read_text(encoding="utf-8"))]


def stale(page: Path, name: str, body: str, rendered: str) -> Optional[str]:
    """Why ``body`` is not ``rendered`` (a short diff), or None when it is."""
    if body == rendered:
        return None
    diff = difflib.unified_diff(body.splitlines(), rendered.splitlines(), "in the page", "printed now", lineterm="")
    shown = "\n".join(list(diff)[:40])
    where = page.relative_to(ROOT)
    return f"{where}: example {name!r} is not what mpdoctor prints now; run `{REGENERATE}`\n{shown}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when an example is stale")
    options = parser.parse_args(argv)
    cache: Dict[str, str] = {}
    used = set()
    problems = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")

        def replace(match: "re.Match[str]", page: Path = page) -> str:
            name = match.group("name")
            if name not in EXAMPLES and name not in TABLES:
                problems.append(f"{page.relative_to(ROOT)}: no example named {name!r} in docs/examples.py")
                return match.group(0)
            used.add(name)
            if name not in cache:
                cache[name] = render(name)
            why = stale(page, name, match.group("body"), cache[name])
            if why and options.check:
                problems.append(why)
            return f"<!-- example: {name} -->\n{cache[name]}<!-- /example -->"

        new = MARKER.sub(replace, text)
        if new != text and not options.check:
            page.write_text(new, encoding="utf-8")
            print(f"updated {page.relative_to(ROOT)}")
    for name in sorted((set(EXAMPLES) | set(TABLES)) - used):
        problems.append(f"example {name!r} is shown on no page")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
