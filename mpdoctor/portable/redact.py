"""Secret redaction, shared by the environment probe and every renderer.

This module must stay stdlib-only and importable by old interpreters (3.8+):
the environment probe loads it into the *target* interpreter, which may be any
Python the user points ``--python`` at.

Two layers, both applied by default:

* by name: an environment variable whose name says it holds a secret
  (``HF_TOKEN``, ``WANDB_API_KEY``, ``AWS_SECRET_ACCESS_KEY``...) has its value
  replaced whole, at collection time, so the secret never leaves the target
  process;
* by shape: any string that reaches a report is scanned for credentials in URLs
  (``https://user:<password>@``, ``https://<token>@``), ``NAME=value``,
  ``NAME: value``, ``"name": "value"``, ``--name value`` and
  ``Authorization: Bearer value`` where the name says secret, private key blocks,
  and the token formats of the major providers.

The scan is one pass of one regular expression over the text, in linear time:
every alternative either starts with a literal, or may start only where a word
starts, and gives up after a bounded number of characters unless it matches, and
a match is consumed. A value is read only after a name that says secret, so
nothing is scanned twice. ``redact_clip`` redacts *before* it cuts, so a cut can
never leave the first characters of a token behind.
"""

import re

REDACTED = "<redacted>"

# Words that, as a ``_``/``-``/``.``-separated part of a name, mark its value as a
# secret. ``PWD`` is deliberately absent: it is the shell's working directory.
_SECRET_NAME_WORDS = frozenset(
    """
    TOKEN TOKENS SECRET SECRETS PASSWORD PASSWD PASS PASSPHRASE KEY KEYS APIKEY
    CREDENTIAL CREDENTIALS CREDS AUTH AUTHORIZATION COOKIE COOKIES COOKIEJAR
    SESSION SESSIONID SIGNATURE SIG PRIVATE DSN BEARER APITOKEN ACCESSTOKEN
    """.split()
)
# A name whose only secret word is TOKEN(S) counts tokens, not credentials, when it
# also has one of these parts: ``max_new_tokens``, ``pad_token_id``, ``eos_token``.
_TOKEN_COUNT_WORDS = frozenset(
    """
    PAD EOS BOS UNK CLS SEP MASK SPECIAL ADDITIONAL MAX MIN NUM NEW TOTAL VOCAB START
    END ID IDS LEN LENGTH COUNT SIZE PER LIMIT BUDGET PROMPT INPUT OUTPUT GENERATED
    BATCH IMAGE SEQ
    """.split()
)

# Token formats that are secrets wherever they appear, whatever surrounds them.
_TOKENS = (
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub: classic, OAuth, user-to-server, server-to-server, refresh
    r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained
    r"gl(?:pat|dt|rt|ptt|oas|cbt|ft|imt|agent)-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"sk-[A-Za-z0-9_\-]{20,}",  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), DeepSeek...
    r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe secret and restricted keys
    r"whsec_[A-Za-z0-9]{20,}",  # Stripe webhook secret
    r"xox[abposer]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}",  # Slack
    r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}",  # AWS key ids
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API key
    r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access token
    r"npm_[A-Za-z0-9]{30,}",  # npm
    r"pypi-[A-Za-z0-9_\-]{30,}",  # PyPI
    r"wandb_v1_[A-Za-z0-9_]{20,}",  # Weights & Biases (newer keys)
    # JWT, also without its signature (a name split at dots, a line cut); header and payload are bounded so that
    # a failed attempt costs a bounded scan.
    r"eyJ[A-Za-z0-9_\-]{8,256}\.eyJ[A-Za-z0-9_\-]{8,8192}(?:\.[A-Za-z0-9_\-]*)?",
)
_KEY_TAIL = r"[A-Za-z0-9_\-]{0,80}"  # names are bounded: a failed attempt costs at most this
# Where a name or a token may start: not inside a word (nor at the n of ``\\n``), but right after an escaped
# newline or tab, as in a repr'd or JSON-escaped string (a traceback's source line, a log that logs JSON).
_WORD_START = r"(?:(?<![A-Za-z0-9_\-\\])|(?<=\\[nrt]))"
_TOKEN_START = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"
_SCAN = re.compile(
    # A PEM private key block; its end is found by the caller, within a bound.
    r"(?P<pem>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)"
    # URL userinfo: everything between :// and the last @ before the host (a password may hold a raw @).
    r"|(?P<url>://(?P<userinfo>[^/?#\s\"]*)@)"
    r"|(?P<token>" + _TOKEN_START + r"(?:" + "|".join(_TOKENS) + r"))"
    # --name value, --name=value (a command line that echoes --hf_token ...)
    r"|(?P<flag>" + _WORD_START + r"--?(?P<flagname>[A-Za-z]" + _KEY_TAIL + r")(?:=|[ \t]+))"
    # name=value, name: value, "name": "value", os.environ["NAME"] = "value", {\"name\": \"value\"}
    r"|(?P<pair>" + _WORD_START + r"(?P<name>[A-Za-z_]" + _KEY_TAIL + r")\\?[\"']?\]?[ \t]{0,8}[:=](?![=/:])[ \t]{0,8})"
    # Bearer X on its own (a curl -H line cut before its header name)
    r"|(?P<bearer>" + _WORD_START + r"(?:[Bb]earer|BEARER)[ \t]+)"
)
# The value after a name that says secret: an optional auth scheme kept, then one quoted (also \"escaped\") or
# bare value. A bare value ends at an escape (``\\n``): in a repr'd string the next line's name follows it.
_VALUE = re.compile(
    r"(?P<scheme>(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN|[Dd]igest|DIGEST)[ \t]+(?=[^\s]))?"
    r"(?:(?P<open>\\?[\"'])(?P<quoted>(?:[^\"'\n\\]|\\[^\"'\n])*)(?P<close>\\?[\"'])?"
    r"|(?P<bare>(?:[^\s\"'&\\]|\\(?![nrt\"'\\]))+))"
)
# A login as people choose them (alice, git, oauth2, j.smith); random tokens mix case or run to many digits.
_PLAIN_USER = re.compile(r"[A-Za-z][a-z0-9._\-]{0,23}\Z")
# Passwords that say the user name is the token: GitHub's x-oauth-basic, or an empty one.
_TOKEN_USER_PASSWORDS = frozenset(("", "x-oauth-basic"))
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
PEM_WINDOW = 65536  # a private key block is a few KB; an unterminated one is masked this far
# Characters redacted beyond a cut: enough for a token or URL that starts before the cut to be recognised whole.
CLIP_MARGIN = 4096
_PARTS = re.compile(r"[^A-Z0-9]+")
_CAMEL_LAST = re.compile(r"[A-Z]?[a-z0-9]+\Z")


def is_secret_name(name):
    """True when a variable's (or a field's, or an option's) name says its value is a secret."""
    upper = name.upper()
    parts = [part for part in _PARTS.split(upper) if part]
    secret = [part for part in parts if part in _SECRET_NAME_WORDS]
    if not secret:
        last = _CAMEL_LAST.search(name)  # accessToken, apiKey, SecretAccessKey (but not KeyError)
        return upper.endswith("KEY") or bool(last and last.group(0).upper() in _SECRET_NAME_WORDS)
    if all(part in ("TOKEN", "TOKENS") for part in secret):
        return not any(part in _TOKEN_COUNT_WORDS for part in parts)
    return True


def _userinfo(userinfo):
    """``user:password`` of a URL as it may appear: a plain user name is kept, it helps support."""
    user, colon, password = userinfo.partition(":")
    plain = (
        _PLAIN_USER.match(user) is not None
        and sum(ch.isdigit() for ch in user) <= 4
        and not _SCAN.match(user)
        and not (colon and password.lower() in _TOKEN_USER_PASSWORDS)
    )
    if not plain:
        return REDACTED  # a token as the user name (https://<token>:x-oauth-basic@host)
    return user + ":" + REDACTED if colon else user


def _value(text, start, out):
    """Mask the value that starts at ``start`` (after a secret name); return where scanning goes on."""
    found = _VALUE.match(text, start)
    if found is None:
        return start
    if found.group("scheme"):
        out.append(found.group("scheme"))
    if found.group("open") is not None:
        out.append(found.group("open") + REDACTED + (found.group("close") or ""))
    else:
        out.append(REDACTED)
    return found.end()


def redact_text(text):
    """Mask credentials found by shape in free text, in one linear pass."""
    if not text:
        return text
    out, pos, search = [], 0, _SCAN.search
    while True:
        found = search(text, pos)
        if found is None:
            break
        out.append(text[pos : found.start()])
        kind = found.lastgroup
        if kind == "token":
            out.append(REDACTED)
            pos = found.end()
        elif kind == "url":
            out.append("://" + _userinfo(found.group("userinfo")) + "@")
            pos = found.end()
        elif kind == "pem":
            end = _PEM_END.search(text, found.end(), found.end() + PEM_WINDOW)
            out.append(REDACTED)
            pos = end.end() if end else min(len(text), found.end() + PEM_WINDOW)
        else:
            out.append(found.group(0))
            pos = found.end()
            name = found.group("name") or found.group("flagname")
            if kind == "bearer" or is_secret_name(name):
                pos = _value(text, pos, out)
    out.append(text[pos:])
    return "".join(out)


def redact_clip(text, limit, tail=False, marker="..."):
    """``text`` redacted and then cut to ``limit`` characters (its end when ``tail``), marked where cut.

    Only ``limit`` plus a margin of characters is redacted, so a huge string costs
    little; the margin lets a secret that starts before the cut be recognised whole.
    """
    text = str(text)
    if len(text) <= limit:
        return redact_text(text)
    if tail:
        kept = redact_text(text[-(limit + CLIP_MARGIN) :])
        return kept if len(kept) <= limit else marker + kept[-limit:]
    kept = redact_text(text[: limit + CLIP_MARGIN])
    return kept if len(kept) <= limit and len(text) <= limit + CLIP_MARGIN else kept[:limit] + marker


def redact_env_value(name, value):
    """The value of environment variable ``name`` as it may appear in a report."""
    if is_secret_name(name) and value:
        return REDACTED
    return redact_text(value)


def redact_tree(obj):
    """Return a copy of JSON-like data with every string (keys too) passed through redact_text.

    Mapping keys that name a secret (``"HF_TOKEN": ...``) have their values masked too,
    so a snapshot edited or produced elsewhere cannot smuggle one through.
    """
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if isinstance(key, str) and isinstance(value, str) and is_secret_name(key) and value:
                out[redact_text(key)] = REDACTED
            else:
                out[redact_text(key) if isinstance(key, str) else key] = redact_tree(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact_tree(item) for item in obj]
    return obj
