"""Secrets never reach a report: canary values through the real probe and every output format."""

from __future__ import annotations

import json
import os

import pytest

from helpers import fixture_path, run_cli
from mpdoctor.portable.redact import REDACTED, is_secret_name, redact_env_value, redact_text, redact_tree

CANARIES = {
    "HF_TOKEN": "hf_CanaryCanaryCanaryCanary0001",
    "WANDB_API_KEY": "canary-wandb-0002",
    "AWS_SECRET_ACCESS_KEY": "canary/aws+secret0003",
    "PIP_INDEX_URL": "https://alice:canary-pip-0004@pypi.example.com/simple",
    "PIP_EXTRA_INDEX_URL": "https://ghp_CanaryCanaryCanaryCanary0005@git.example.com/simple",
    "CUDA_SECRET_THING": "canary-0006",
    "NCCL_SOCKET_IFNAME": "eth0?token=canary-0007",
}
SECRETS = [
    "CanaryCanary",
    "canary-wandb-0002",
    "canary/aws+secret0003",
    "canary-pip-0004",
    "canary-0006",
    "canary-0007",
]


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
    result = run_cli(
        "check",
        "--format",
        fmt,
        "--output",
        str(out),
        "--save-snapshot",
        str(saved),
        "--fail-on",
        "never",
        env=canary_env,
    )
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
        '{"url": "git+https://bob:canary-pip-0004@github.com/x/y.git"}'
    )
    data["torch"]["error_message"] = "failed to fetch https://x.example/?api_key=canary-0006"
    path = tmp_path / "leaky.json"
    path.write_text(json.dumps(data))
    for fmt in ("json", "markdown", "text"):
        result = run_cli("check", "--snapshot", str(path), "--format", fmt, "--fail-on", "never")
        assert result.returncode == 0, result.stderr
        assert_clean(result.stdout)


@pytest.mark.parametrize(
    "name, secret",
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("WANDB_API_KEY", True),
        ("OPENAI_APIKEY", True),
        ("DB_PASSWORD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        # issue 33: digits after the word, and the names the usual tools read
        ("HF_TOKEN2", True),
        ("TORCH_DB_PASSWORD1", True),
        ("hfToken2", True),
        ("PGPASSWORD", True),
        ("MYSQL_PWD", True),
        ("SSHPASS", True),
        ("REDISCLI_AUTH", True),
        ("AZURE_CLIENT_SECRET", True),
        ("AZURE_STORAGE_CONNECTION_STRING", True),
        ("AWS_SESSION_TOKEN", True),
        ("SLACK_WEBHOOK_URL", True),
        ("SENTRY_DSN", True),
        ("OLDPWD", False),
        ("GIT_AUTHOR_NAME", False),
        ("KeyError", False),
        ("eosToken", False),
        ("max_new_tokens2", False),
        ("PGPASSFILE", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("CUDA_VISIBLE_DEVICES", False),
        ("PYTORCH_CUDA_ALLOC_CONF", False),
        ("PWD", False),
        ("PATH", False),
    ],
)
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


# Every shape of issue 22, each with the secret it hides and what must survive around it.
SHAPES = [
    (
        "PIP_EXTRA_INDEX_URL='https://ghp_Sec1aaaaaaaaaaaaaaaaaaaaaa:x-oauth-basic@github.com/x'",
        "Sec1",
        "https://<redacted>@github.com/x",
    ),
    (
        "apex @ git+https://Sec2tokentokentokentoken:x-oauth-basic@github.com/NVIDIA/apex",
        "Sec2",
        "git+https://<redacted>@github.com/NVIDIA/apex",
    ),
    ("https://user:pa@Sec3@host/simple", "Sec3", "https://user:<redacted>@host/simple"),
    ("https://Sec4aaaaaaaaaaaaaaaaaaaaaaaa@git.example.com/x", "Sec4", "https://<redacted>@git.example.com"),
    ("curl -H 'Authorization: Bearer Sec5.abc-def' x", "Sec5", "Authorization: Bearer <redacted>' x"),
    ("Authorization: token Sec6", "Sec6", "Authorization: token <redacted>"),
    ("X-API-Key: Sec7", "Sec7", "X-API-Key: <redacted>"),
    ('api_key = "Sec8 with spaces"', "Sec8", 'api_key = "<redacted>"'),
    ('{"api_key": "Sec9", "steps": 10}', "Sec9", '"steps": 10}'),
    ("password: Sec10", "Sec10", "password: <redacted>"),
    ("token: Sec11", "Sec11", "token: <redacted>"),
    ("python train.py --hf_token Sec12 --lr 1e-4", "Sec12", "--hf_token <redacted> --lr 1e-4"),
    ('os.environ["HF_TOKEN"] = "Sec13"', "Sec13", 'os.environ["HF_TOKEN"] = "<redacted>"'),
    ("key sk_live_Sec14aaaaaaaaaaaaaa", "Sec14", "key <redacted>"),
    ("AIzaSec15aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "Sec15", "<redacted>"),
    ("npm_Sec16aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "Sec16", "<redacted>"),
    ("HF_COOKIEJAR=sessionid=Sec17", "Sec17", "HF_COOKIEJAR=<redacted>"),
    ("github_pat_Sec18aaaaaaaaaaaaaaaaaaaa_bbbb", "Sec18", "<redacted>"),
    ("gho_Sec19aaaaaaaaaaaaaaaaaaaaaaa ghs_Sec19bbbbbbbbbbbbbbbbbbbbbb", "Sec19", "<redacted> <redacted>"),
    ("hf_Sec20aaaaaaaaaaaaaaaaaaaaaa", "Sec20", "<redacted>"),
    ("sk-Sec21aaaaaaaaaaaaaaaaaaaaaa and sk-ant-api03-Sec21bbbbbbbbbbbbbbb", "Sec21", "<redacted> and <redacted>"),
    ("AKIASEC22AAAAAAAAAAA ASIASEC22BBBBBBBBBBB", "SEC22", "<redacted> <redacted>"),
    ("aws_secret_access_key = Sec23/K7MDENG/bPxRfiCYEXAMPLEKEY", "Sec23", "aws_secret_access_key = <redacted>"),
    ('"SecretAccessKey": "Sec24"', "Sec24", '"SecretAccessKey": "<redacted>"'),
    ("xoxb-Sec25-aaaaaaaaaa", "Sec25", "<redacted>"),
    ("glpat-Sec26aaaaaaaaaaaaaaaaaaaa", "Sec26", "<redacted>"),
    ("rk_test_Sec27aaaaaaaaaaa", "Sec27", "<redacted>"),
    ("pypi-AgEIcHlwaS5vcmcSec28aaaaaaaaaaaaaaaaaaaaaaaaaa", "Sec28", "<redacted>"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTec29aaaaaa.sig-sig", "Tec29", "<redacted>"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpSec30\nabc\n-----END RSA PRIVATE KEY-----\nnext",
        "Sec30",
        "<redacted>\nnext",
    ),
    ("https://host/x?access_token=Sec31&page=2", "Sec31", "access_token=<redacted>&page=2"),
    ("accessToken=Sec32 clientSecret: Sec32", "Sec32", "accessToken=<redacted> clientSecret: <redacted>"),
]


@pytest.mark.parametrize("text, secret, kept", SHAPES, ids=[s[1] for s in SHAPES])
def test_every_shape_of_issue_22(text, secret, kept):
    masked = redact_text(text)
    assert secret not in masked
    assert kept in masked
    assert redact_text(masked) == masked  # redaction is applied more than once on the way out: it must be stable


@pytest.mark.parametrize(
    "text",
    [
        "max_new_tokens=20 pad_token_id=0 eos_token: </s> num_tokens: 512",  # token counts, not credentials
        "KeyError: 'weight'",
        "TOKENIZERS_PARALLELISM=false",
        "ssh://git@github.com/x/y",
        "https://alice@pypi.example.com/simple",
        "RuntimeError: expected scalar type Float but found Half",
        "std::token::next",
        "if key == other:",
        "http://host:8080/path",
        "lr=1e-4 steps=10",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


def test_a_plain_url_user_is_kept_a_token_like_one_is_not():
    assert redact_text("https://alice:pw@h/") == f"https://alice:{REDACTED}@h/"
    assert redact_text("https://oauth2:pw@h/") == f"https://oauth2:{REDACTED}@h/"
    assert redact_text("https://a1b2c3d4e5f6:x@h/") == f"https://{REDACTED}@h/"  # digits all through: a token
    assert redact_text("https://" + "u" * 30 + "@h/") == f"https://{REDACTED}@h/"  # too long for a login


def test_redaction_comes_before_the_cut():
    from mpdoctor.portable.redact import redact_clip

    token = "hf_" + "Z" * 40
    for cut in range(150, 200):
        text = "x" * cut + " " + token + " tail"
        clipped = redact_clip(text, 200)
        assert "ZZZZ" not in clipped and "hf_" not in clipped
        assert len(clipped) <= 200 + len("...")
    tail = redact_clip("https://user:" + "p" * 500 + "@host/" + "y" * 100, 120, tail=True)
    assert "ppp" not in tail and tail.startswith("...")


def test_redact_tree_redacts_keys_and_secret_named_fields():
    tree = {"hf_" + "K" * 30: "v", "apiKey": "x", "list": ["token: y"], "n": 1.5}
    assert redact_tree(tree) == {REDACTED: "v", "apiKey": REDACTED, "list": [f"token: {REDACTED}"], "n": 1.5}
