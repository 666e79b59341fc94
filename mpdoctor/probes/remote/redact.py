"""Secret redaction, shared by the environment probe and every renderer.

This module must stay stdlib-only and importable by old interpreters (3.8+):
the environment probe loads it into the *target* interpreter, which may be any
Python the user points ``--python`` at.

Two layers, both applied by default:

* by name: an environment variable whose name says it holds a secret
  (``HF_TOKEN``, ``WANDB_API_KEY``, ``AWS_SECRET_ACCESS_KEY``...) has its value
  replaced whole, at collection time, so the secret never leaves the target
  process;
* by shape: any string that reaches a report is scanned for credentials in URLs,
  secret-looking query parameters, ``NAME=value`` where the name says secret, and
  well-known token formats.
"""

import re

REDACTED = "<redacted>"

# Words that, as a ``_``-separated part of a variable name, mark its value as a
# secret. ``PWD`` is deliberately absent: it is the shell's working directory.
_SECRET_NAME_WORDS = frozenset(
    """
    TOKEN TOKENS SECRET SECRETS PASSWORD PASSWD PASS PASSPHRASE KEY KEYS APIKEY
    CREDENTIAL CREDENTIALS CREDS AUTH COOKIE SESSION SIGNATURE PRIVATE DSN
    """.split()
)

# user:password@ in any scheme://; the user part is kept, it helps support.
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/\s:@]+):([^/\s@]+)@")
# scheme://<token>@host with no password: GitHub and GitLab tokens travel this way.
_URL_BARE_TOKEN = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([A-Za-z0-9_\-]{20,})@")
_QUERY_SECRET = re.compile(
    r"(?i)([?&;](?:access_token|token|api_key|apikey|key|secret|password|passwd|sig|signature)=)([^&#\s]+)"
)
_KNOWN_TOKENS = re.compile(
    r"\b(?:"
    r"hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|sk-[A-Za-z0-9_\-]{20,}"  # OpenAI-style keys
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+"  # JWT
    r")"
)


# NAME=value in free text (a log that echoes `export HF_TOKEN=...`); masked when NAME names a secret.
_ASSIGNMENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{0,100})=(?:\"[^\"\n]{0,1000}\"|'[^'\n]{0,1000}'|[^\s'\"&]{1,1000})")


def is_secret_name(name):
    """True when an environment variable's name says its value is a secret."""
    words = re.split(r"[^A-Z0-9]+", name.upper())
    return any(word in _SECRET_NAME_WORDS for word in words) or name.upper().endswith("KEY")


def redact_text(text):
    """Mask credentials found by shape in free text (URLs, tokens, query strings)."""
    if not text:
        return text
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + m.group(2) + ":" + REDACTED + "@", text)
    text = _URL_BARE_TOKEN.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    if "=" in text:
        text = _ASSIGNMENT.sub(lambda m: m.group(1) + "=" + REDACTED if is_secret_name(m.group(1)) else m.group(0),
                               text)
    return _KNOWN_TOKENS.sub(REDACTED, text)


def redact_env_value(name, value):
    """The value of environment variable ``name`` as it may appear in a report."""
    if is_secret_name(name) and value:
        return REDACTED
    return redact_text(value)


def redact_tree(obj):
    """Return a copy of JSON-like data with every string passed through redact_text.

    Mapping keys that name a secret (``"HF_TOKEN": ...``) have their values masked too,
    so a snapshot edited or produced elsewhere cannot smuggle one through.
    """
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if isinstance(key, str) and isinstance(value, str) and is_secret_name(key) and value:
                out[key] = REDACTED
            else:
                out[key] = redact_tree(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact_tree(item) for item in obj]
    return obj
