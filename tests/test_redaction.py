"""Secrets never reach a report: canary values through the real probe and every output format."""

from __future__ import annotations

import json
import os

import pytest

from helpers import fixture_path, run_cli
from mpdoctor.probes.remote.redact import REDACTED, is_secret_name, redact_env_value, redact_text, redact_tree

CANARIES = {
    "HF_TOKEN": "hf_CanaryCanaryCanaryCanary0001",
    "WANDB_API_KEY": "canary-wandb-0002",
    "AWS_SECRET_ACCESS_KEY": "canary/aws+secret0003",
    "PIP_INDEX_URL": "https://alice:canary-pip-0004@pypi.example.com/simple",
    "PIP_EXTRA_INDEX_URL": "https://ghp_CanaryCanaryCanaryCanary0005@git.example.com/simple",
    "CUDA_SECRET_THING": "canary-0006",
    "NCCL_SOCKET_IFNAME": "eth0?token=canary-0007",
}
SECRETS = ["CanaryCanary", "canary-wandb-0002", "canary/aws+secret0003", "canary-pip-0004", "canary-0006",
           "canary-0007"]


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


@pytest.fixture(scope="module")
def canary_env():
    return {**os.environ, **CANARIES}


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_live_probe_redacts_canaries_in_every_format(fmt, canary_env, tmp_path):
    saved = tmp_path / "snap.json"
    out = tmp_path / f"report.{fmt}"
    result = run_cli("check", "--format", fmt, "--output", str(out), "--save-snapshot", str(saved),
                     "--fail-on", "never", env=canary_env)
    assert result.returncode == 0, result.stderr
    report, snapshot = out.read_text(), saved.read_text()
    assert_clean(report + result.stdout + result.stderr)
    assert_clean(snapshot)
    env = json.loads(snapshot)["environment"]["env"]
    # The variables are there, so support can see they are set, but masked.
    assert env["HF_TOKEN"] == REDACTED and env["CUDA_SECRET_THING"] == REDACTED
    assert "WANDB_API_KEY" not in env  # not a variable that matters to precision: not collected at all
    assert env["PIP_INDEX_URL"] == f"https://alice:{REDACTED}@pypi.example.com/simple"
    assert env["NCCL_SOCKET_IFNAME"] == f"eth0?token={REDACTED}"


def test_a_snapshot_with_secrets_from_elsewhere_is_redacted_on_output(tmp_path):
    data = json.loads(fixture_path("precision-stack-conflicts").read_text())
    data["environment"]["env"]["HF_TOKEN"] = CANARIES["HF_TOKEN"]
    data["environment"]["distributions"][0]["direct_url"] = (
        '{"url": "git+https://bob:canary-pip-0004@github.com/x/y.git"}')
    data["torch"]["error_message"] = "failed to fetch https://x.example/?api_key=canary-0006"
    path = tmp_path / "leaky.json"
    path.write_text(json.dumps(data))
    for fmt in ("json", "markdown", "text"):
        result = run_cli("check", "--snapshot", str(path), "--format", fmt, "--fail-on", "never")
        assert result.returncode == 0, result.stderr
        assert_clean(result.stdout)


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("HUGGING_FACE_HUB_TOKEN", True), ("WANDB_API_KEY", True), ("OPENAI_APIKEY", True),
    ("DB_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True), ("GOOGLE_APPLICATION_CREDENTIALS", True),
    ("CUDA_VISIBLE_DEVICES", False), ("PYTORCH_CUDA_ALLOC_CONF", False), ("PWD", False), ("PATH", False),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_shapes_of_secrets_in_text():
    assert redact_text("https://u:p4ss@host/x") == f"https://u:{REDACTED}@host/x"
    assert redact_text("see hf_abcdefghijklmnopqrstuvwxyz01 now") == f"see {REDACTED} now"
    assert redact_text("AKIAABCDEFGHIJKLMNOP") == REDACTED
    assert redact_text("a=1&password=hunter2&b=2") == f"a=1&password={REDACTED}&b=2"
    assert redact_text("nothing secret 12.8") == "nothing secret 12.8"
    assert redact_env_value("HF_TOKEN", "") == ""  # empty stays visibly empty


def test_secret_assignments_in_free_text():
    line = "export HF_TOKEN=canary-a1 MY_PASSWORD=\"canary b2\" DB_KEY='canary-c3' lr=1e-4 steps=10"
    masked = redact_text(line)
    for secret in ("canary-a1", "canary b2", "canary-c3"):
        assert secret not in masked
    assert "lr=1e-4 steps=10" in masked and masked.startswith("export HF_TOKEN=<redacted>")


def test_redact_tree_masks_secret_keys_and_walks_lists():
    tree = {"env": {"MY_TOKEN": "x1", "OTHER": ["https://a:b@c"]}, "n": 3}
    assert redact_tree(tree) == {"env": {"MY_TOKEN": REDACTED, "OTHER": [f"https://a:{REDACTED}@c"]}, "n": 3}
