"""No secret out (issue 22): canaries of every shape, planted in every kind of field, in every output.

Each canary is a distinct secret body (``Kn`` + field + shape + padding) put into one shape (a token as a
URL's user name, a password with a raw ``@``, ``Authorization: Bearer``, ``api_key = "..."``, ``hf_...``,
``AKIA...``, a JWT...) and planted in one kind of field: environment variables, index URLs, Requires-Dist
URLs, project-scan lines, a torch ImportError, explain's lines, frames and source, audit tensor names. Lines
that are cut (the project scan's 200 characters, explain's 4,096) get a token straddling the cut. Then the
real CLI runs against a real throwaway environment and every output it writes (text, JSON and Markdown
reports, the saved snapshot, explain's text and JSON, audit's three formats, stdout and stderr) must hold
no canary, not even the first characters of one.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from adversarial.running import clean_env, mpdoctor

SHAPES = {
    "url-user-token": "https://{S}:x-oauth-basic@github.com/x/y.git",
    "url-bare-token": "https://{S}@git.example.com/simple",
    "url-raw-at-password": "https://user:p@{S}@pypi.example.com/simple",
    "bearer": "Authorization: Bearer {S}",
    "auth-token": "Authorization: token {S}",
    "x-api-key": "X-API-Key: {S}",
    "api-key-assign": 'api_key = "{S}"',
    "api-key-json": '{{"api_key": "{S}"}}',
    "password": "password: {S}",
    "token": "token: {S}",
    "hf-token-flag": "--hf_token {S}",
    "environ": 'os.environ["HF_TOKEN"] = "{S}"',
    "cookiejar": "HF_COOKIEJAR=sessionid={S}",
    "query": "https://host/simple?access_token={S}&x=1",
    "export": "export WANDB_API_KEY={S}",
    "hf": "hf_{S}",
    "ghp": "ghp_{S}",
    "gho": "gho_{S}",
    "ghs": "ghs_{S}",
    "github-pat": "github_pat_{S}",
    "openai": "sk-proj-{S}",
    "anthropic": "sk-ant-api03-{S}",
    "stripe": "sk_live_{S}",
    "google": "AIza{S}",
    "npm": "npm_{S}",
    "pypi": "pypi-{S}",
    "slack": "xoxb-{S}",
    "gitlab": "glpat-{S}",
    "aws-key-id": "AKIA{U}",
    "aws-secret": "aws_secret_access_key = {S}",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ{S}.c2lnbmF0dXJl",
}
URL_SHAPES = ("url-user-token", "url-bare-token", "url-raw-at-password", "query")
FIELDS = ("env", "index-url", "requires-dist", "scan", "torch-error", "explain", "audit")
CANARY = re.compile(r"kn\d{4}", re.IGNORECASE)  # the start of every canary body: a cut one still shows it


def body(field: str, shape: str) -> str:
    return f"Kn{FIELDS.index(field):02d}{list(SHAPES).index(shape):02d}" + "q" * 32


def planted(field: str, shape: str) -> str:
    aws = f"KN{FIELDS.index(field):02d}{list(SHAPES).index(shape):02d}" + "Q" * 10
    return SHAPES[shape].format(S=body(field, shape), U=aws)


def every(field: str) -> list[str]:
    return [planted(field, shape) for shape in SHAPES]


def straddling(field: str, prefix: str, cut: int) -> str:
    """``prefix`` padded so that an hf_ token starts a few characters before ``cut`` and runs past it."""
    token = "hf_" + body(field, "hf") + "Z" * 20
    return prefix + " " + "x" * (cut - len(prefix) - 12) + " " + token


def assert_no_canary(where: str, text: str) -> None:
    found = CANARY.search(text)
    assert found is None, f"{where}: a canary got out: ...{text[max(0, found.start() - 80) : found.end() + 20]}..."


# ---------------------------------------------------------------- mpdoctor check on a real environment


@pytest.fixture(scope="module")
def leaky_env(fake_venv):
    """A venv whose torch raises an ImportError full of secrets, and a package with secret Requires-Dist URLs."""
    message = "\n".join(["cannot load torch from a private mirror"] + every("torch-error"))
    requires = "".join(f"Requires-Dist: apex @ git+{planted('requires-dist', shape)}\n" for shape in URL_SHAPES)
    requires += "".join(f"Requires-Dist: {line}\n" for line in every("requires-dist"))
    return fake_venv(
        "leaky",
        {
            "torch/__init__.py": f"raise ImportError({message!r})\n",
            "xformers/__init__.py": "",
            "xformers-0.0.28.dist-info/METADATA": (
                f"Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.28\n{requires}"
            ),
        },
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A working directory whose code uses AMP on lines full of secrets, one of them longer than the cut."""
    root = tmp_path_factory.mktemp("project")
    for i, secret in enumerate(every("scan")):  # one file each: the scan keeps a file's first use of each kind
        (root / f"step{i}.py").write_text(f"import torch\nwith torch.autocast('cuda'):  # {secret}\n    pass\n")
    cut = straddling("scan", "scaler = torch.cuda.amp.GradScaler()  #", 200)
    (root / "train.py").write_text(f"import torch\n{cut}\n", encoding="utf-8")
    return root


def planted_environment() -> dict:
    env = {f"PYTORCH_KN_{i}": secret for i, secret in enumerate(every("env"))}
    env["PIP_INDEX_URL"] = planted("index-url", "url-user-token")
    env["PIP_EXTRA_INDEX_URL"] = " ".join(planted("index-url", shape) for shape in URL_SHAPES[1:])
    env["HF_TOKEN"] = "hf_" + body("env", "hf")
    return clean_env(**env)


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_check_writes_no_canary_in_any_format(fmt, leaky_env, project, tmp_path):
    saved, out = tmp_path / "snapshot.json", tmp_path / f"report.{fmt}"
    args = [
        "check",
        "--python",
        str(leaky_env / "bin" / "python"),
        "--format",
        fmt,
        "--no-kernels",
        "--fail-on",
        "never",
        "--save-snapshot",
        str(saved),
    ]
    if fmt != "text":
        args += ["--output", str(out)]  # text goes to stdout, the others to a file: both paths are covered
    result = mpdoctor(*args, cwd=project, env=planted_environment())
    assert result.returncode == 0, result.stderr[-2000:]
    report = out.read_text(encoding="utf-8") if fmt != "text" else result.stdout
    for where, text in (
        ("report", report),
        ("stdout", result.stdout),
        ("stderr", result.stderr),
        ("saved snapshot", saved.read_text(encoding="utf-8")),
    ):
        assert_no_canary(f"check --format {fmt}: {where}", text)
    # the canaries were really there to leak: every field kind reached the snapshot, masked
    snapshot = json.loads(saved.read_text(encoding="utf-8"))
    env = snapshot["environment"]["env"]
    assert len([name for name in env if name.startswith("PYTORCH_KN_")]) == len(SHAPES)
    assert env["HF_TOKEN"] == "<redacted>" and "<redacted>" in env["PIP_INDEX_URL"]
    assert "<redacted>" in snapshot["torch"]["error_message"]
    xformers = next(d for d in snapshot["environment"]["distributions"] if d["name"] == "xformers")
    assert len(xformers["requires"]) == len(URL_SHAPES) + len(SHAPES)
    uses = snapshot["environment"]["project"]["torch_amp_uses"]
    assert len(uses) == len(SHAPES) + 1 and all("<redacted>" in use["text"] for use in uses)
    assert "<redacted>" in report


# ---------------------------------------------------------------- explain


def explain_log() -> str:
    error = "RuntimeError: expected scalar type Float but found Half"
    return (
        "Traceback (most recent call last):\n"
        f'  File "/home/u/hf_{body("explain", "hf")}/train.py", line 3, in <module>\n'
        f"{error} " + " ".join(every("explain")) + "\n" + straddling("explain", error, 4096) + "\n"
    )


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_explain_writes_no_canary(fmt, tmp_path):
    log = tmp_path / f"run-hf_{body('explain', 'hf')}.log"  # the source: a file named after a token
    log.write_text(explain_log(), encoding="utf-8")
    runs = {
        "--file": mpdoctor("explain", "--file", str(log), "--format", fmt),
        "stdin": mpdoctor("explain", "-", "--format", fmt, input=explain_log()),
        "argument": mpdoctor("explain", explain_log(), "--format", fmt),
    }
    for how, result in runs.items():
        assert result.returncode == 0, result.stderr[-2000:]
        assert "<redacted>" in result.stdout
        assert_no_canary(f"explain {how} --format {fmt}: stdout", result.stdout)
        assert_no_canary(f"explain {how} --format {fmt}: stderr", result.stderr)
    if fmt == "json":
        data = json.loads(runs["--file"].stdout)
        assert "<redacted>" in data["source"]
        assert [len(item["lines"]) for item in data["recognised"]] == [2]


# ---------------------------------------------------------------- audit


def leaky_safetensors(path: Path) -> Path:
    # each module holds an fp16 weight beside an fp32 bias, so that findings name it in every format
    modules = [f"model.{secret}" for secret in every("audit")] + [straddling("audit", "model.layers.0", 200)]
    header, offset = {}, 0
    for module in modules:
        for name, dtype, size in ((f"{module}.weight", "F16", 2), (f"{module}.bias", "F32", 4)):
            header[name] = {"dtype": dtype, "shape": [1], "data_offsets": [offset, offset + size]}
            offset += size
    header["__metadata__"] = {"format": "pt", "source": planted("audit", "url-user-token")}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\x00" * offset)
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_audit_writes_no_canary(fmt, tmp_path):
    path = leaky_safetensors(tmp_path / "model.safetensors")
    out = tmp_path / f"audit.{fmt}"
    result = mpdoctor("audit", str(path), "--format", fmt, "--output", str(out), "--fail-on", "never")
    assert result.returncode == 0, result.stderr[-2000:]
    report = out.read_text(encoding="utf-8")
    assert_no_canary(f"audit --format {fmt}: report", report)
    assert_no_canary(f"audit --format {fmt}: stdout+stderr", result.stdout + result.stderr)
    assert "<redacted>" in report


# ---------------------------------------------------------------- redaction is bounded work


def test_huge_strings_to_redact_cost_linear_time_not_a_timeout(fake_venv, tmp_path):
    # the old redactor was quadratic on runs of URL-ish characters: a torch raising ImportError('B' * 200000)
    # was reported as "import torch hangs", and a 130 KB CUDA_VISIBLE_DEVICES took 93 s
    venv = fake_venv("huge-import-error", {"torch/__init__.py": "raise ImportError('B' * 200000)\n"})
    devices = ",".join(["GPU-0a1b2c3d"] * 10_000)  # 130 KB
    result = mpdoctor(
        "check",
        "--python",
        str(venv / "bin" / "python"),
        "--format",
        "json",
        "--no-kernels",
        "--fail-on",
        "never",
        "--timeout",
        "30",
        cwd=tmp_path,
        env=clean_env(CUDA_VISIBLE_DEVICES=devices),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    torch = report["snapshot"]["torch"]
    assert torch["status"] == "import-error" and torch["error_type"] == "ImportError", torch["status"]
    assert "BBBB" in torch["error_message"]  # kept (clipped), not lost to a timeout
    assert report["snapshot"]["environment"]["env"]["CUDA_VISIBLE_DEVICES"].startswith("GPU-0a1b2c3d,")
