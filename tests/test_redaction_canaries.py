"""No secret out, issue 33 (item 9): 75 shapes of secrets, each with its own canary, in every source and output.

First the redactor alone, one shape at a time, and the ordinary texts a diagnosis needs, which must come out
unchanged. Then every shape at once through the real CLI: planted in environment variables (as values, and as
names that say secret), in a real throwaway environment's METADATA Summary and Requires-Dist, its direct_url.json
and a .pth line, checked with `mpdoctor check` on that interpreter (JSON, text, Markdown, --save-snapshot); in a
log given to `mpdoctor explain` (text, JSON); in a snapshot from elsewhere given to `mpdoctor fleet compare` and
`check --snapshot`. ``{C}`` in a shape is its canary (``Cnry07``), found again case-insensitively wherever even
part of the secret got out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import fixture_path, run_cli
from mpdoctor.cli import app
from mpdoctor.portable.redact import REDACTED, redact_text
from secret_shapes import CLASSES, INNOCENT_CLASSES, innocent_texts, secret_shapes

# name -> a secret as it is really written. Names ending in ``!`` run to the end of the line (a multi-word password):
# the CLI runs put each of them last on its line.
SECRET_SHAPES = {
    # by name: digits after the word, and the names the usual tools read
    "env-token-digit": "HF_TOKEN2={C}abcdefgh",
    "env-password-digit": "TORCH_DB_PASSWORD1={C}",
    "pgpassword": "PGPASSWORD={C}",
    "mysql-pwd": "MYSQL_PWD={C}",
    "secret-digit": "MY_SECRET_2={C}",
    "api-key-digit": "OPENAI_API_KEY3={C}",
    "twine-password": "TWINE_PASSWORD={C}",
    "redis-auth": "REDISCLI_AUTH={C}",
    "sshpass": "SSHPASS={C}",
    "ci-job-token": "CI_JOB_TOKEN={C}",
    "aws-secret": "AWS_SECRET_ACCESS_KEY={C}/K7MDENG+bPxRfiCY",
    "aws-session": "AWS_SESSION_TOKEN={C}",
    "azure-secret": "AZURE_CLIENT_SECRET={C}",
    "azure-connection": "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={C}==",
    "gcp-key": "GCP_SERVICE_ACCOUNT_KEY={C}",
    "google-api-key": "GOOGLE_API_KEY={C}",
    "credentials": "DOCKER_CREDENTIALS={C}",
    "auth-header-name": "X-Auth-Token: {C}",
    "camel-token": "accessToken={C}",
    "camel-digit": "hfToken2={C}",
    "webhook-name": "TEAMS_WEBHOOK={C}",
    # by value: quoted whole, both quote styles, an apostrophe inside
    "dq-apostrophe": 'password="it\'s-{C}"',
    "sq-apostrophe": "password='it's-{C}'",
    "dq-spaces": 'api_key = "{C} with spaces"',
    "json-escaped-quote": '{{"password": "pa\\"ss{C}"}}',
    "json-in-json": '{{\\"password\\": \\"pa\\\\\\"ss{C}\\"}}',
    "bytes-key": "{{b'api_key': b'{C}'}}",
    "bytes-key-dq": '{{b"token": b"{C}"}}',
    "dict-repr": "{{'api_key': '{C}', 'steps': 10}}",
    # multi-word passwords, to the end of the line
    "password-colon-words!": "password: correct horse {C} battery",
    "password-equals-words!": "password=correct horse {C}",
    "passphrase-words!": "PASSPHRASE: open sesame {C}",
    "password-quoted-words": 'password: "correct horse {C}"',
    "password-capital!": "Password: staple {C}",
    # netrc
    "netrc": "machine pypi.example.com login alice password {C}",
    "netrc-bare": "password {C}",
    "netrc-passwd": "machine h login u passwd {C}",
    # webhooks
    "slack-webhook": "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/{C}abcdefghijkl",
    "discord-webhook": "https://discord.com/api/webhooks/123456789012345678/{C}-abcdefghijklmnop",
    "discordapp-webhook": "https://discordapp.com/api/webhooks/1234/{C}xyz",
    "office-webhook": "https://acme.webhook.office.com/webhookb2/{C}-1234@5678/IncomingWebhook/abc/def",
    "generic-webhook": "https://ci.example.com/hooks/webhook/{C}abcdef",
    # bearer and friends
    "bearer-header": "Authorization: Bearer {C}.abc-def",
    "bearer-alone": "bearer {C}xyz",
    "basic-header": "Proxy-Authorization: Basic {C}==",
    "token-header": "Authorization: token {C}",
    "cookie": "Cookie: session={C}",
    # well-known token shapes
    "hf": "hf_{C}AbCdEfGhIjKlMnOpQrStUvWx",
    "ghp": "ghp_{C}AbCdEfGhIjKlMnOpQrStUvWxYz01",
    "github-pat": "github_pat_11ABCDEFG0{C}_AbCdEfGhIjKlMnOpQrStUvWxYz",
    "openai": "sk-{C}AbCdEfGhIjKlMnOpQrStUvWx",
    "openai-proj": "sk-proj-{C}AbCdEfGhIjKlMnOpQrSt_UvWx",
    "slack-bot": "xoxb-1234567890-{C}AbCdEfGhIj",
    "slack-app": "xoxa-2-{C}AbCdEfGhIj",
    "slack-user": "xoxp-1234-{C}AbCdEfGhIj",
    "aws-key-id": "AKIA{U}ABCDEFGHIJ",
    "gitlab": "glpat-{C}AbCdEfGhIjKlMnOp",
    "vault": "hvs.{C}AbCdEfGhIjKlMnOpQrStUv",
    "docker": "dckr_pat_{C}AbCdEfGhIjKlMnOpQr",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{C}MjM0NTY3ODkwIn0.c2lnbmF0dXJl",
    # credentials in URLs and DSNs
    "url-password": "https://alice:{C}@pypi.example.com/simple",
    "url-token-user": "https://{C}abcdef0123456789abcdef@github.com/org/repo.git",
    "postgres-dsn": "postgresql://bob:{C}@db.example.com:5432/app",
    "redis-dsn": "redis://:{C}@cache:6379/0",
    "mongodb-dsn": "mongodb+srv://admin:{C}@cluster0.example.net/",
    "pypi-token-user": "https://__token__:{C}@pypi.example.com/simple",
    "database-url": "DATABASE_URL=mysql://root:{C}@localhost/db",
    "sentry-dsn": "SENTRY_DSN=https://{C}abc@o1.ingest.sentry.io/1",
    "query-token": "https://host/x?access_token={C}&page=2",
    "sas-signature": "https://acct.blob.core.windows.net/c/b?sv=2022&sig={C}%2Bx%3D&se=2025",
    # command lines
    "flag-password": "train.py --password {C} --lr 1e-4",
    "flag-api-key": "train.py --api-key={C}",
    "curl-user": "curl -u alice:{C} https://example.com",
    "yaml-secret": "client_secret: {C}",
    "environ-assign": "os.environ['OPENAI_API_KEY'] = '{C}'",
    # issue 40: an index token in the URL path, a URL password holding / # ?, password options, names, colour codes,
    # provider prefixes and keys of no known format (tests/secret_shapes.py makes many more of each)
    "index-path-token": "PIP_INDEX_URL=https://dl.example.io/basic/{C}aB3dE5fG7hJ9/pypi/simple",
    "conda-t-token": "https://conda.anaconda.org/t/ab-{C}1f3a-1b2c-4d5e-8f90-123456789abc/acme",
    "fury-path-token": "https://pypi.fury.io/{C}aB3dE5fG7hJ9/acme/",
    "url-password-slash": "https://alice:pa/ss#{C}?x@pypi.example.com/simple",
    "docker-login": "docker login -u alice -p {C}xyz registry.example.com",
    "mysql-attached": "mysql -uroot -p{C}xyz app",
    "id-token": "id_token={C}",
    "input-token": "INPUT_TOKEN={C}",
    "gh-pat": "GH_PAT={C}",
    "cred-psk-jwt-otp": "WIFI_PSK={C}",
    "ansi-name": "\x1b[1mHF_TOKEN\x1b[0m: \x1b[32m{C}xyz\x1b[0m",
    "groq": "gsk_{C}AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefgh",
    "google-oauth-secret": "GOCSPX-{C}AbCdEfGhIjKlMnOpQrSt",
    "sendgrid": "SG.{C}AbCdEfGhIjKlMnOp.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcde",
    "high-entropy": "DEPLOY_REF={C}aB3dE5fG7hJ9kL1mN2pQ4",
}

# Ordinary texts a diagnosis needs: each must come out of the redactor exactly as it went in.
KEPT = [
    "CUDA_VISIBLE_DEVICES=GPU-5b2c7f0e-1d3a-4e8b-9c6d-2f1a0b3c4d5e,GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789",
    "NVIDIA_VISIBLE_DEVICES=all",
    "model.to(dtype=torch.float16)",
    'with torch.autocast("cuda", dtype=torch.bfloat16):',
    "torch 2.13.0+cu121 (CUDA 12.1, cuDNN 90100)",
    "/usr/local/cuda-12.1/lib64/libcublas.so.12",
    "nvidia-cublas-cu12==12.1.3.1",
    "Requires-Dist: apex @ git+https://github.com/NVIDIA/apex.git@24.04.01",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "CUBLAS_WORKSPACE_CONFIG=:4096:8",
    "NCCL_IB_HCA=mlx5_0,mlx5_1",
    "max_new_tokens=20 pad_token_id=0 eos_token: </s>",
    "TOKENIZERS_PARALLELISM=false",
    "KeyError: 'weight'",
    "PWD=/home/alice/project OLDPWD=/tmp",
    "GIT_AUTHOR_NAME=Alice",
    "PGPASSFILE=/home/alice/.pgpass",
    "ssh://git@github.com/x/y",
    "https://download.pytorch.org/whl/cu121",
    "/srv/app/webhooks/handler.py",
    'FATAL: password authentication failed for user "alice"',
    "the password is required",
    "/home/u/.cache/huggingface/hub/models--bert-base-uncased/snapshots/86b5e0934494bd15c9632b12f734a8a67f723594",
    "scaler = torch.cuda.amp.GradScaler()",
    "oneflow 0.9.0 mock_torch enabled",
    "apex-0.1.dist-info/direct_url.json",
    "lr=1e-4 steps=10",
    # module paths whose last part reads as a secret's name, with their dtypes (mpdoctor audit's lines)
    "model.embed_tokens: float32 (1 tensor, 32.0 KB) in a float16 model",
    "bert.encoder.layer.0.attention.self.key: mostly float16; bias float32",
    "bert.embeddings.token_type_embeddings: 1 float32, 2 float16",
    "model.key_proj: torch.bfloat16",
    # issue 40: prose after a name that says token or key is not its value
    "token: not a weight file",
    "KeyError: 'weight'; key: not found in the state dict",
    "docker run -p 8080:80 image",
    "undefined symbol: _ZN3c104cuda20CUDACachingAllocator9allocatorE",
]

CANARY = re.compile(r"cnry\d\d", re.IGNORECASE)


def canary(index: int) -> str:
    return f"Cnry{index:02d}"


def planted(name: str) -> str:
    """The shape ``name`` with its own canary in it."""
    index = list(SECRET_SHAPES).index(name)
    return SECRET_SHAPES[name].format(C=canary(index), U=canary(index).upper())


def runs_to_line_end(name: str) -> bool:
    return name.endswith("!")


def secret_line_groups(width: int) -> list[list[str]]:
    """Every planted shape, packed into lines of about ``width`` characters. A shape that runs to the end of its
    line ends one, so that no shape is masked only because the one before it swallowed it."""
    lines: list[list[str]] = [[]]
    for name in SECRET_SHAPES:
        if runs_to_line_end(name):
            continue
        if lines[-1] and len("  ".join(lines[-1] + [planted(name)])) > width:
            lines.append([])
        lines[-1].append(planted(name))
    greedy = [planted(name) for name in SECRET_SHAPES if runs_to_line_end(name)]
    for line in lines:
        if greedy:
            line.append(greedy.pop(0))
    return lines + [[shape] for shape in greedy]


def secret_lines(width: int, prefix: str = "") -> list[str]:
    return [prefix + "  ".join(group) for group in secret_line_groups(width)]


def assert_no_canary(where: str, text: str) -> None:
    found = CANARY.search(text)
    assert found is None, f"{where}: a canary got out: ...{text[max(0, found.start() - 100) : found.end() + 30]}..."


# ---------------------------------------------------------------- the redactor itself, one shape at a time


@pytest.mark.parametrize("name", list(SECRET_SHAPES))
def test_each_secret_shape_is_masked(name):
    text = planted(name)
    masked = redact_text(text)
    assert_no_canary(name, masked)
    assert REDACTED in masked
    assert redact_text(masked) == masked  # redaction runs more than once on the way out: it must be stable


@pytest.mark.parametrize("text", KEPT)
def test_what_a_diagnosis_needs_survives(text):
    assert redact_text(text) == text


def test_the_table_is_as_wide_as_the_issue():
    # issue 33 ran 69 shapes through the redactor, issue 40 90; this table has at least as many, each with its own
    # canary, and the generator below makes 40 of each of issue 40's classes on top
    assert len(SECRET_SHAPES) >= 90 and len(KEPT) >= 20
    assert len({planted(name) for name in SECRET_SHAPES}) == len(SECRET_SHAPES)
    assert all(len(CANARY.findall(planted(name))) == 1 for name in SECRET_SHAPES)


# ---------------------------------------------------------------- issue 40's classes, made by a generator

# How many generated shapes must stay masked: every class of tests/secret_shapes.py, this many of each.
PER_CLASS = 40
MUST_STAY_MASKED = PER_CLASS * len(CLASSES)


def leaked(out: str, secret: str) -> str | None:
    """Any 8 characters of ``secret`` that got out (all of it when it is shorter)."""
    for start in range(max(1, len(secret) - 7)):
        if secret[start : start + 8] in out:
            return secret[start : start + 8]
    return None


def test_every_generated_secret_is_masked():
    shapes = list(secret_shapes(seed=40, per_class=PER_CLASS))
    assert len(shapes) == MUST_STAY_MASKED >= 280
    assert {cls for cls, _, _ in shapes} == set(CLASSES)
    out_of = []
    for cls, text, secret in shapes:
        masked = redact_text(text)
        if leaked(masked, secret) or REDACTED not in masked or redact_text(masked) != masked:
            out_of.append((cls, text, masked))
    assert out_of == [], f"{len(out_of)} of {MUST_STAY_MASKED} generated shapes got out: {out_of[:5]}"


def test_generated_innocent_text_is_unchanged():
    texts = list(innocent_texts(seed=40, per_class=30))
    assert {cls for cls, _ in texts} == set(INNOCENT_CLASSES)
    changed = [(cls, text, redact_text(text)) for cls, text in texts if redact_text(text) != text]
    assert changed == [], changed[:5]


@pytest.mark.parametrize(
    "text, masked",
    [
        # the issue's own: an index token in the path, Anaconda's /t/, Gemfury both ways
        (
            "PIP_INDEX_URL=https://dl.example.io/basic/aB3dE5fG7hJ9kL1m/pypi/simple",
            f"PIP_INDEX_URL=https://dl.example.io/basic/{REDACTED}/pypi/simple",
        ),
        ("https://pypi.fury.io/aB3dE5fG7hJ9kL1m/acme/", f"https://pypi.fury.io/{REDACTED}/acme/"),
        ("https://aB3dE5fG7hJ9kL1m@pypi.fury.io/acme/", f"https://{REDACTED}@pypi.fury.io/acme/"),
        ("https://alice:p/a#s?s@host.example.com/simple", f"https://alice:{REDACTED}@host.example.com/simple"),
        ("docker login -p s3cr3t reg.io", f"docker login -p {REDACTED} reg.io"),
        ("mysql -uroot -ps3cr3t app", f"mysql -uroot -p{REDACTED} app"),
        ("token: not a weight file", "token: not a weight file"),
        # what must not move: a port, a published port, a database named after -p, a commit in a URL
        ("https://host:8080/x?to=a@b.org", "https://host:8080/x?to=a@b.org"),
        ("docker run -p 8080:80 img; mysql -p app", "docker run -p 8080:80 img; mysql -p app"),
        ("https://github.com/NVIDIA/apex/commit/86b5e0934494bd15c9632b12f734a8a67f723594",) * 2,
    ],
)
def test_issue_40_examples(text, masked):
    assert redact_text(text) == masked


def test_a_password_runs_to_the_end_of_its_line_or_its_quote_and_no_further():
    # the rule: after a name that says password, a bare value is every word up to the end of the line, a quote
    # that closes it, an & (the next query parameter), an escaped newline, or the next name= / --flag
    cases = {
        "password: correct horse battery staple": "password: <redacted>",
        "password: correct horse lr=1e-4 steps: 10": "password: <redacted> lr=1e-4 steps: 10",
        "password=correct horse X: rank 0": "password=<redacted>",  # a colon ends no password
        "--db-password=a b --lr 1e-4": "--db-password=<redacted> b --lr 1e-4",  # a flag's value is one word
        "db_password=a b --lr 1e-4": "db_password=<redacted> --lr 1e-4",
        "a=1&password=two words&b=2": "a=1&password=<redacted>&b=2",
        '{"msg": "password: two words", "n": 1}': '{"msg": "password: <redacted>", "n": 1}',
        "['password: it's two words', 'next']": "['password: <redacted>', 'next']",
        "password: two words\\nepoch: 3": "password: <redacted>\\nepoch: 3",
        "password: two words\nepoch: 3": "password: <redacted>\nepoch: 3",
        "api_key: one two": "api_key: <redacted> two",  # a key never holds a space: one word
    }
    for text, masked in cases.items():
        assert redact_text(text) == masked, text


def test_netrc_password_is_masked_but_prose_about_passwords_is_not():
    assert redact_text("machine h login u password pw1 machine g") == "machine h login u password <redacted> machine g"
    assert redact_text("default login u password 'pw 2'") == "default login u password '<redacted>'"
    for prose in ("password authentication failed", "Password is required", "the password for alice"):
        assert redact_text(prose) == prose


# ---------------------------------------------------------------- every shape, in every source, through the CLI
#
# One throwaway environment carries every shape in each source the probe reads: a distribution per shape whose
# METADATA Summary is the shape and whose direct_url.json holds it, one distribution whose Requires-Dist lines are
# the shapes, a .pth file whose lines mention apex and hold them, and environment variables whose values (and,
# for the NAME=value shapes, whose names) are the shapes. Then `mpdoctor check` runs on its interpreter.

PTH_WIDTH = 230  # the probe keeps 300 characters of a .pth line: every line, with its prefix, fits whole
NAME_SHAPE = re.compile(r"(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>\S+)\Z")


def value_env() -> dict[str, str]:
    """Variables the probe collects (their prefixes matter to precision) whose values are the shapes."""
    return {f"PYTORCH_CNRY_{index}": planted(name) for index, name in enumerate(SECRET_SHAPES)}


def name_env() -> dict[str, str]:
    """The NAME=value shapes as variables the probe collects: HF_TOKEN2=X as TORCH_HF_TOKEN2, secret by name alone."""
    shapes = [NAME_SHAPE.match(planted(name)) for name in SECRET_SHAPES]
    return {"TORCH_" + shape.group("name"): shape.group("value") for shape in shapes if shape}


def secret_env() -> dict[str, str]:
    return {**value_env(), **name_env()}


def leaky_site() -> dict[str, str]:
    files = {}
    for index, name in enumerate(SECRET_SHAPES):
        info = f"cnry_pkg{index}-1.0.dist-info"
        files[f"{info}/METADATA"] = (
            f"Metadata-Version: 2.1\nName: cnry-pkg{index}\nVersion: 1.0\nSummary: {planted(name)}\n"
        )
        files[f"{info}/direct_url.json"] = json.dumps({"url": planted(name), "dir_info": {"editable": True}})
    requires = "".join(f"Requires-Dist: {planted(name)}\n" for name in SECRET_SHAPES)
    files["cnry_requires-1.0.dist-info/METADATA"] = (
        f"Metadata-Version: 2.1\nName: cnry-requires\nVersion: 1.0\n{requires}"
    )
    files["apex-cnry.pth"] = "".join(line + "\n" for line in secret_lines(PTH_WIDTH, "/opt/apex/src  "))
    # `apex` as the PyPI namesake (a Pyramid toolkit): its finding quotes the requirements that name pyramid, so
    # every shape reaches the text and Markdown reports too, not only the JSON
    files["apex/__init__.py"] = ""
    pyramid = "".join(f"Requires-Dist: pyramid_{index} ; {planted(name)}\n" for index, name in enumerate(SECRET_SHAPES))
    files["apex-0.9.10.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: apex\nVersion: 0.9.10\n{pyramid}"
    return files


@pytest.fixture(scope="module")
def leaky_venv(fake_venv):
    return fake_venv("redaction-canaries", leaky_site())


def test_check_and_its_snapshot_hold_no_canary(leaky_venv, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(secret_env())
    saved, report = tmp_path / "snapshot.json", tmp_path / "report.json"
    python = str(leaky_venv / "bin" / "python")
    common = ["--python", python, "--no-kernels", "--fail-on", "never"]
    live = run_cli("check", *common, "-f", "json", "-o", str(report), "--save-snapshot", str(saved), env=env)
    assert live.returncode == 0, live.stderr[-2000:]
    text = run_cli("check", *common, "-f", "text", env=env)
    assert text.returncode == 0, text.stderr[-2000:]
    outputs = {
        "check -f json": report.read_text(encoding="utf-8"),
        "--save-snapshot": saved.read_text(encoding="utf-8"),
        "check -f text": text.stdout,
        "stdout and stderr": live.stdout + live.stderr + text.stderr,
    }
    for fmt in ("text", "markdown"):  # the other renderers, from the saved snapshot (no second probe)
        again = run_cli("check", "--snapshot", str(saved), "-f", fmt, "--fail-on", "never")
        assert again.returncode == 0, again.stderr[-2000:]
        outputs[f"check --snapshot -f {fmt}"] = again.stdout
    for where, output in outputs.items():
        assert_no_canary(where, output)
    # every source really reached the outputs, masked: the test would see a leak
    for where in ("check -f text", "check --snapshot -f text", "check --snapshot -f markdown"):
        assert outputs[where].count(REDACTED) >= len(SECRET_SHAPES), where
    snapshot = json.loads(outputs["--save-snapshot"])
    collected = snapshot["environment"]["env"]
    assert {name for name in secret_env()} <= set(collected)
    assert all(REDACTED in collected[name] for name in secret_env())
    dists = {d["name"]: d for d in snapshot["environment"]["distributions"]}
    for index in range(len(SECRET_SHAPES)):
        dist = dists[f"cnry-pkg{index}"]
        assert REDACTED in dist["summary"] and REDACTED in dist["direct_url"], dist
    assert all(REDACTED in line for line in dists["cnry-requires"]["requires"])
    assert len(dists["cnry-requires"]["requires"]) == len(SECRET_SHAPES)
    pth = snapshot["environment"]["apex"]["pth_lines"]
    assert len(pth) == len(secret_line_groups(PTH_WIDTH)) and all(REDACTED in line["line"] for line in pth)


# ---------------------------------------------------------------- explain and fleet compare, on their own inputs


@pytest.fixture(scope="module")
def torch_dtype_error() -> str:
    """The error real torch raises for an fp32 @ fp16 matmul (on the CPU), as its last traceback line says it."""
    code = "import torch\ntorch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.half)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    return [line for line in done.stderr.splitlines() if line.startswith("RuntimeError")][-1]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_explain_holds_no_canary(fmt, torch_dtype_error, tmp_path):
    log = tmp_path / "train.log"
    lines = [f"{torch_dtype_error}  {line}" for line in secret_lines(1000)]
    assert len(lines) <= 5  # explain shows up to five lines of one failure: every line is shown
    log.write_text('Traceback (most recent call last):\n  File "/srv/train.py", line 3\n' + "\n".join(lines) + "\n")
    result = run_cli("explain", "--file", str(log), "--format", fmt)
    assert result.returncode == 0, result.stderr[-2000:]
    assert_no_canary(f"explain -f {fmt}", result.stdout + result.stderr)
    assert result.stdout.count(REDACTED) >= len(SECRET_SHAPES)  # every line was shown, masked
    if fmt == "json":
        assert [len(item["lines"]) for item in json.loads(result.stdout)["recognised"]] == [len(lines)]


def planted_snapshot(path: Path, env: dict[str, str]) -> Path:
    """A snapshot as another machine (or a hand) wrote it, ``env`` and every shape in it, unredacted."""
    data = json.loads(fixture_path("cpu-kernels").read_text())
    data["environment"]["env"].update(env)
    data["environment"]["distributions"][0]["summary"] = "  ".join(secret_lines(10**6))
    data["torch"]["error_message"] = "\n".join(secret_lines(200))
    path.write_text(json.dumps(data))
    return path


def fleet_and_check_outputs(leaky: Path, fmt: str) -> dict[str, str]:
    plain = str(fixture_path("cpu-kernels"))
    fleet = CliRunner().invoke(app, ["fleet", "compare", str(leaky), plain, "--format", fmt, "--fail-on", "never"])
    assert fleet.exit_code == 0, fleet.output[-2000:]
    check = CliRunner().invoke(app, ["check", "--snapshot", str(leaky), "--format", fmt, "--fail-on", "never"])
    assert check.exit_code == 0, check.output[-2000:]
    return {f"fleet compare -f {fmt}": fleet.output, f"check --snapshot -f {fmt}": check.output}


@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
def test_fleet_compare_and_check_of_a_foreign_snapshot_hold_no_canary(fmt, tmp_path):
    env = {**value_env(), "PGPASSWORD": "Cnry90", "MYSQL_PWD": "Cnry91", "HF_TOKEN2": "Cnry92"}
    outputs = fleet_and_check_outputs(planted_snapshot(tmp_path / "leaky.json", env), fmt)
    for where, output in outputs.items():
        assert_no_canary(where, output)
    # the planted variables differ from the other file's: fleet compare showed every one of them, masked
    # Markdown escapes the marker's angle brackets (render/sanitise.py): "\\<redacted\\>" renders as "<redacted>"
    shown = outputs[f"fleet compare -f {fmt}"].replace("\\<", "<").replace("\\>", ">")
    assert shown.count(REDACTED) >= len(SECRET_SHAPES)


@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
def test_fleet_compare_masks_a_foreign_snapshots_variables_by_name(fmt, tmp_path):
    outputs = fleet_and_check_outputs(planted_snapshot(tmp_path / "leaky.json", name_env()), fmt)
    for where, output in outputs.items():
        assert_no_canary(where, output)


# ---------------------------------------------------------------- mpdoctor audit: a module path is not a credential

AUDIT_MODULES = (
    "model.embed_tokens",
    "model.encoder.attention.self.key",
    "model.token_type_embeddings",
    "model.key_proj",
)


def test_a_dtype_after_a_secret_name_is_kept_but_a_secret_is_not():
    for name in ("api_key", "HF_TOKEN", "token", "key"):
        assert redact_text(f"{name}: float32 (2 tensors)") == f"{name}: float32 (2 tensors)"
        assert redact_text(f"{name}: Cnry99float32") == f"{name}: {REDACTED}"
    assert redact_text("api_key: sk-Cnry98AbCdEfGhIjKlMnOpQrStUvWx") == f"api_key: {REDACTED}"
    assert redact_text("HF_TOKEN=hf_Cnry97AbCdEfGhIjKlMnOpQrStUvWx") == f"HF_TOKEN={REDACTED}"
    assert redact_text("token: 12 Cnry96") == f"token: {REDACTED} Cnry96"  # a count, but no dtype after it
    assert redact_text("password: float32 Cnry95") == f"password: {REDACTED}"  # a password may be any words


@pytest.fixture(scope="module")
def keyed_checkpoint(tmp_path_factory):
    """A real fp16 model saved by torch whose fp32 modules are named like secrets, and a real secret in its path."""
    import torch
    from torch import nn

    model = nn.Module()
    model.embed_tokens = nn.Embedding(8, 4)
    model.key_proj = nn.Linear(4, 4)
    model.token_type_embeddings = nn.Embedding(2, 4)
    model.encoder = nn.Module()
    model.encoder.attention = nn.Module()
    model.encoder.attention.self = nn.Module()
    model.encoder.attention.self.key = nn.Linear(4, 4)
    model.encoder.attention.self.query = nn.Linear(4, 4)
    model.encoder.attention.self.value = nn.Linear(4, 4)
    model.out = nn.Linear(64, 64)  # most of the model: float16
    model.half()
    for module in (model.embed_tokens, model.key_proj, model.token_type_embeddings, model.encoder.attention.self.key):
        module.float()
    folder = tmp_path_factory.mktemp("api_key=Cnry94")  # a path that holds a secret: still masked
    path = folder / "model.pt"
    torch.save({f"model.{k}": v for k, v in model.state_dict().items()}, path)
    return path


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_audit_output_keeps_module_paths_and_dtypes_that_read_as_secret_names(keyed_checkpoint, fmt):
    result = run_cli("audit", str(keyed_checkpoint), "--format", fmt)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert_no_canary(f"audit -f {fmt}", out + result.stderr)
    for module in AUDIT_MODULES:
        assert f"{module}: float32 (" in out, (module, out)
    assert REDACTED in out.replace("\\<", "<").replace("\\>", ">")  # the secret in the path: masked
