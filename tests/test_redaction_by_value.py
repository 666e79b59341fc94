"""No secret out, by value: what a variable named as a secret holds is masked wherever it turns up.

Masking by name hides ``WANDB_API_KEY``'s value in the environment mpdoctor collects; masking by shape hides what
reads as a credential anywhere. Neither sees the same value quoted elsewhere in a shape nothing can tell from a
hash or a word: a torch whose import fails with a message that dumps the configuration (a 40-character lowercase
hex W&B key, an AWS secret key with slashes, a password of plain letters). The probe and the host both know the
values of their own secret variables, and mask them in every string that reaches a report.
"""

from __future__ import annotations

import os

import pytest

from helpers import run_cli
from mpdoctor.portable.redact import REDACTED, redact_text

# Values no shape recognises: lowercase hex, letters and slashes, a plain password, and a short token
SECRETS = {
    "WANDB_API_KEY": "3f2a9c0e4b7d8a1f6e5c2b9d0a7f4e3c1b8d6a2f",
    "AWS_SECRET_ACCESS_KEY": "wjalrxutnfemi/k7mdeng/bpxrficyexamplekey",
    "MY_DB_PASSWORD": "hunter2hunter2",
    "HF_TOKEN": "hf_CanarySecret",
}
NOT_SECRETS = {"CUDA_TOKEN_COUNT": "1", "SOME_TOKEN_FLAG": "true"}  # secret by name, too short to be one


def test_the_values_of_secret_variables_are_masked_in_any_text(monkeypatch):
    for name, value in {**SECRETS, **NOT_SECRETS}.items():
        monkeypatch.setenv(name, value)
    text = "config dump: " + " | ".join(SECRETS.values()) + " | flags 1 true"
    masked = redact_text(text)
    assert not any(value in masked for value in SECRETS.values()), masked
    assert masked == "config dump: " + " | ".join([REDACTED] * len(SECRETS)) + " | flags 1 true"


def test_a_value_is_forgotten_once_its_variable_is_gone(monkeypatch):
    monkeypatch.setenv("MY_DB_PASSWORD", "hunter2hunter2")
    assert redact_text("pw hunter2hunter2") == f"pw {REDACTED}"
    monkeypatch.delenv("MY_DB_PASSWORD")
    assert redact_text("pw hunter2hunter2") == "pw hunter2hunter2"


@pytest.fixture(scope="module")
def torch_quoting_secrets(fake_venv):
    """A venv whose torch fails to import with a message that quotes the secret variables' values."""
    names = ", ".join(repr(name) for name in SECRETS)
    code = f"import os\nraise ImportError('config dump: ' + ' | '.join(os.environ.get(k, '') for k in ({names})))\n"
    return fake_venv("torch-quoting-secrets", {"torch/__init__.py": code})


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_a_torch_import_error_quoting_secrets_leaks_none(torch_quoting_secrets, fmt, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(SECRETS)
    python = str(torch_quoting_secrets / "bin" / "python")
    saved = tmp_path / "snapshot.json"
    done = run_cli(
        "check",
        "--python",
        python,
        "--no-kernels",
        "--fail-on",
        "never",
        "-f",
        fmt,
        "--save-snapshot",
        str(saved),
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outputs = {"stdout": done.stdout, "stderr": done.stderr, "snapshot": saved.read_text(encoding="utf-8")}
    assert "config dump" in done.stdout, done.stdout[-2000:]  # the message reached the report: a leak would show
    for where, output in outputs.items():
        leaked = [name for name, value in SECRETS.items() if value in output]
        assert not leaked, (where, leaked)
