"""A generator of secrets as they are really written, by class, and of innocent text that reads like them.

Issue 40 found 33 of 90 shapes surviving the redactor: tokens in a package index's URL path, URL passwords
holding ``/ # ?``, password options (``docker login -p X``, ``mysql -pX``), names (``id_token``, ``GH_PAT``,
``*_CRED``...), a colour code between a name and its value, and provider prefixes. This module makes each class
from parts (hosts, users, commands, names, token alphabets and lengths as the providers issue them) with a seeded
random source, so the table is not the issue's strings but as many variations of each as asked.

``secret_shapes(seed, per_class)`` yields ``(class, text, secret)``: ``secret`` is the part of ``text`` that must
not come out (nor any 8 characters of it). ``innocent_texts(seed, per_class)`` yields ``(class, text)``: texts
a diagnosis needs, which must come out unchanged.
"""

from __future__ import annotations

import json
import random
import string

BASE62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = BASE62 + "-_"


def token(rng: random.Random, length: int, alphabet: str = BASE62) -> str:
    """A random token; a long base62 one has upper case, lower case and digits, as a key has (two of each)."""
    while True:
        text = "".join(rng.choice(alphabet) for _ in range(length))
        if (
            alphabet != BASE62
            or length < 12
            or (
                sum(c.isdigit() for c in text) >= 2
                and sum(c.isupper() for c in text) >= 2
                and sum(c.islower() for c in text) >= 2
            )
        ):
            return text


def uuid_like(rng: random.Random) -> str:
    return "-".join(token(rng, n, HEX) for n in (8, 4, 4, 4, 12))


INDEX_HOSTS = ["dl.example.io", "pkgs.acme.dev", "repo.internal.example.com", "nexus.corp.example:8443", "10.0.0.7"]
USERS = ["alice", "ci", "deploy", "j.smith", "__token__", "bob-2"]
INDEX_VARS = ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL"]


def _index_token(rng: random.Random) -> str:
    """The tokens private indexes put in a path: an entitlement key, a UUID with a prefix, a hex key."""
    kind = rng.randrange(4)
    if kind == 0:
        return token(rng, rng.choice((16, 20, 24, 32)))
    if kind == 1:
        return rng.choice(("ab", "xy", "cn", "ap")) + "-" + uuid_like(rng)
    if kind == 2:
        return token(rng, 32, HEX)
    return token(rng, 12) + "-" + token(rng, 12)


def _index_url_path(rng: random.Random) -> tuple[str, str]:
    secret = _index_token(rng)
    host = rng.choice(INDEX_HOSTS)
    form = rng.randrange(7)
    if form == 0:
        text = f"{rng.choice(INDEX_VARS)}=https://{host}/basic/{secret}/pypi/simple"
    elif form == 1:
        text = f"https://conda.anaconda.org/t/{secret}/{rng.choice(['pytorch', 'acme', 'main'])}/linux-64"
    elif form == 2:
        text = f"https://pypi.fury.io/{secret}/{rng.choice(USERS[:3])}/"
    elif form == 3:
        text = f"https://{secret}@pypi.fury.io/{rng.choice(USERS[:3])}/"
    elif form == 4:
        text = f"pip install --extra-index-url https://{host}/{secret}/acme/python/simple/ torch"
    elif form == 5:
        text = f"channels:\n  - https://repo.example.org/t/{secret}/acme\n  - defaults"
    else:
        text = f"index-url = https://{host}/{secret}/simple"
    return text, secret


def _url_password(rng: random.Random) -> tuple[str, str]:
    specials = "/#?@:%!$"
    secret = token(rng, 6) + "".join(rng.choice(specials) + token(rng, 4) for _ in range(rng.randint(1, 3)))
    if not any(ch in secret for ch in "/#?"):
        secret = secret[:5] + rng.choice("/#?") + secret[5:]
    user = rng.choice(USERS)
    scheme = rng.choice(("https", "http", "postgresql", "redis", "mongodb+srv"))
    host = rng.choice(INDEX_HOSTS)
    return f"{scheme}://{user}:{secret}@{host}/{rng.choice(['simple', 'db', 'pypi/simple/', ''])}", secret


def _password_option(rng: random.Random) -> tuple[str, str]:
    secret = token(rng, rng.randint(8, 20), BASE62 + "!@%^*+=.,")
    if secret[0] in "-":
        secret = "x" + secret
    forms = [
        f"docker login -u {rng.choice(USERS)} -p {secret} registry.example.com",
        f"podman login --username ci -p {secret} quay.io",
        f"nerdctl login -p {secret} ghcr.io",
        f"sshpass -p {secret} ssh -p 2222 user@host",
        f"mysql -u root -p{secret} -h db.example.com app",
        f"mysqldump -uroot -p{secret} --all-databases",
        f"mariadb -p{secret} shop",
        f"redis-cli -h cache -a {secret} ping",
        f"mongosh -u admin -p {secret} --authenticationDatabase admin",
        f"ldapsearch -x -D cn=admin -w {secret} -b dc=example",
        f"train.py --password {secret} --lr 1e-4",
        f"train.py --password={secret}",
        f"$ {rng.choice(['sudo ', ''])}docker login -p {secret}",
    ]
    return rng.choice(forms), secret


SECRET_NAMES = [
    "id_token",
    "ID_TOKEN",
    "INPUT_TOKEN",
    "GH_PAT",
    "ADO_PAT",
    "GITHUB_PAT",
    "REGISTRY_CRED",
    "DOCKER_CRED",
    "WIFI_PSK",
    "VPN_PSK",
    "AUTH_JWT",
    "SERVICE_JWT",
    "MFA_OTP",
    "LOGIN_TOTP",
    "oidc_id_token",
    "input_token",
]


def _secret_name(rng: random.Random) -> tuple[str, str]:
    name = rng.choice(SECRET_NAMES) + rng.choice(("", "", "2", "_1"))
    secret = token(rng, rng.randint(6, 30), rng.choice((BASE62, HEX, URLSAFE)))
    form = rng.choice(("{n}={s}", "{n}: {s}", 'export {n}="{s}"', "{{'{n}': '{s}'}}", "--{n} {s}"))
    return form.format(n=name, s=secret), secret


SGR = ["\x1b[0m", "\x1b[1m", "\x1b[32m", "\x1b[1;31m", "\x1b[38;5;208m", "\x1b[m"]


def _ansi(rng: random.Random) -> tuple[str, str]:
    secret = token(rng, rng.randint(8, 30))
    name = rng.choice(("HF_TOKEN", "password", "api_key", "WANDB_API_KEY", "client_secret", "GH_PAT"))
    a, b, c = (rng.choice(SGR) for _ in range(3))
    form = rng.randrange(5)
    if form == 0:
        return f"{a}{name}{b}: {c}{secret}\x1b[0m", secret
    if form == 1:
        return f"{name}={a}{secret}{b}", secret
    if form == 2:
        return f"{a}{name}{b}={secret}", secret
    if form == 3:
        return f"INFO {a}{name}{b}{c} = {secret}", secret
    return json.dumps({"line": f"{a}{name}{b}: {c}{secret}"}), secret  # as a JSON log escapes it: \u001b[1m


# Provider prefixes with the alphabet and length each issues (gitleaks' rules and the providers' docs).
PROVIDERS = [
    ("api_org_", BASE62, 34),  # Hugging Face organisation token
    ("GOCSPX-", URLSAFE, 28),  # Google OAuth client secret
    ("gsk_", BASE62, 52),  # Groq
    ("r8_", BASE62, 37),  # Replicate
    ("dop_v1_", HEX, 64),  # DigitalOcean
    ("doo_v1_", HEX, 64),
    ("ATATT3", URLSAFE + "=", 186),  # Atlassian
    ("shpat_", HEX, 32),  # Shopify
    ("shpss_", HEX, 32),
    ("dapi", HEX, 32),  # Databricks
    ("nvapi-", URLSAFE, 64),  # NVIDIA API catalog
    ("pplx-", BASE62, 48),  # Perplexity
    ("xai-", BASE62, 80),  # xAI
    ("lin_api_", BASE62, 40),  # Linear
    ("pul-", HEX, 40),  # Pulumi
]


def _provider(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.1:
        secret = f"SG.{token(rng, 22, URLSAFE)}.{token(rng, 43, URLSAFE)}"  # SendGrid
    else:
        prefix, alphabet, length = rng.choice(PROVIDERS)
        secret = prefix + token(rng, length, alphabet)
    form = rng.choice(("{s}", "key {s} rejected", "Authorization: {s}", "export X={s}", '"{s}"', "{s},"))
    return form.format(s=secret), secret


def _entropy(rng: random.Random) -> tuple[str, str]:
    """A key of no known format: random letters and digits, after any name or on its own."""
    secret = token(rng, rng.randint(24, 64))
    form = rng.choice(("DEPLOY_REF={s}", "X-Custom-Header: {s}", "using {s} for upload", "value={s}&page=2", "[{s}]"))
    return form.format(s=secret), secret


CLASSES = {
    "index-url-path": _index_url_path,
    "url-password-special": _url_password,
    "password-option": _password_option,
    "secret-name": _secret_name,
    "ansi-between": _ansi,
    "provider-prefix": _provider,
    "high-entropy": _entropy,
}


def secret_shapes(seed: int = 40, per_class: int = 40):
    """``(class, text, secret)`` for ``per_class`` texts of each class."""
    rng = random.Random(seed)
    for name, make in CLASSES.items():
        for _ in range(per_class):
            text, secret = make(rng)
            yield name, text, secret


def _prose(rng: random.Random) -> str:
    name = rng.choice(("token", "Token", "key", "api_key", "secret", "HF_TOKEN", "auth"))
    word = rng.choice(("not", "none", "missing", "required", "invalid", "expired", "empty", "null", "for"))
    rest = rng.choice(("a weight file", "found in the state dict", "set in the environment", "", "user alice"))
    return f"{name}: {word} {rest}".rstrip()


def _index_url(rng: random.Random) -> str:
    return rng.choice(
        [
            "https://download.pytorch.org/whl/cu121",
            "https://download.pytorch.org/whl/nightly/cu124",
            f"PIP_INDEX_URL=https://{rng.choice(INDEX_HOSTS)}/basic/acme-ml/pypi/simple",
            "https://pypi.org/simple/torch/",
            "https://conda.anaconda.org/pytorch/linux-64/repodata.json",
            "https://pypi.fury.io/acme/",
            f"--extra-index-url https://{rng.choice(INDEX_HOSTS)}/repository/pypi-proxy/simple",
            "https://discuss.pytorch.org/t/runtimeerror-expected-scalar-type-half-but-found-float/123456",
            f"https://github.com/NVIDIA/apex/commit/{token(rng, 40, HEX)}",
            f"https://github.com/NVIDIA/apex/blob/{token(rng, 40, HEX)}/examples/simple/distributed/main.py",
            "https://host.example.com:8080/pypi/simple?mail=ops@example.com",
            f"https://files.pythonhosted.org/packages/ab/cd/{token(rng, 60, HEX)}/torch-2.13.0-cp311-none.whl",
        ]
    )


def _options(rng: random.Random) -> str:
    return rng.choice(
        [
            "docker run -p 8080:80 -v /data:/data image",
            "mkdir -p /tmp/build/cu121",
            "ssh -p 2222 alice@host",
            "mysql -p app_db",
            "python -m torch.distributed.run -p 29500 train.py",
            "nvcc -arch=sm_80 -o kernel kernel.cu",
            "pip install -r requirements.txt -f https://download.pytorch.org/whl/torch_stable.html",
        ]
    )


def _names(rng: random.Random) -> str:
    return rng.choice(
        [
            f"max_new_tokens={rng.randint(1, 512)} pad_token_id=0",
            f"input_tokens={rng.randint(1, 4096)} output_tokens={rng.randint(1, 512)}",
            "token_ids=[1, 2, 3]",
            "eos_token: </s>",
            f"prompt_tokens: {rng.randint(1, 999)}",
            "PATH=/usr/local/bin:/usr/bin",
            "pin_memory=True",
        ]
    )


def _identifiers(rng: random.Random) -> str:
    return rng.choice(
        [
            f"CUDA_VISIBLE_DEVICES=GPU-{uuid_like(rng)}",
            "TritonGPUAccelerateMatmul2D",
            "meta-llama/Llama-2-7b-chat-hf",
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            f"/home/u/.cache/huggingface/hub/models--bert-base-uncased/snapshots/{token(rng, 40, HEX)}",
            "cudnnConvolutionBackwardFilter",
            "\x1b[1mINFO\x1b[0m: loaded 12 tensors",
            "\x1b[33mwarning\x1b[0m: token: not set",
            "undefined symbol: _ZN3c104cuda20CUDACachingAllocator9allocatorE",
            "undefined symbol: _ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefINS2_6SymIntEEE",
            "model.embed_tokens: float32 (1 tensor, 32.0 KB)",
            f"sha256={token(rng, 64, HEX)}",
        ]
    )


INNOCENT_CLASSES = {"prose": _prose, "index-url": _index_url, "options": _options, "names": _names, "ids": _identifiers}


def innocent_texts(seed: int = 40, per_class: int = 30):
    """``(class, text)`` for ``per_class`` texts of each innocent class."""
    rng = random.Random(seed)
    for name, make in INNOCENT_CLASSES.items():
        for _ in range(per_class):
            yield name, make(rng)
