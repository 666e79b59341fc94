"""What a name says: whether a variable's (a field's, an option's) name marks its value as a secret, or as a
password whose value may be several words. The word tables and the rules that read them, for ``redact``.

Portable (see ``__init__``): stdlib only, Python 3.8+, loaded in the target interpreter too.
"""

import functools
import re

# Words that, as a ``_``/``-``/``.``-separated or camelCase part of a name, mark its value as a secret. Digits
# after a part do not change it (``HF_TOKEN2``, ``DB_PASSWORD1``). ``PWD`` alone is the shell's working directory:
# it counts only as a later part of a name (``MYSQL_PWD``).
_SECRET_NAME_WORDS = frozenset(
    """
    TOKEN TOKENS SECRET SECRETS PASSWORD PASSWD PASS PASSPHRASE KEY KEYS APIKEY
    CREDENTIAL CREDENTIALS CREDS AUTH AUTHN AUTHZ AUTHORIZATION OAUTH COOKIE COOKIES COOKIEJAR
    SESSION SESSIONID SIGNATURE SIG PRIVATE DSN BEARER APITOKEN ACCESSTOKEN WEBHOOK WEBHOOKS WEBHOOKURL SAS
    SSHPASS SMBPASS PAT CRED PSK JWT OTP TOTP HOTP PASSCODE MNEMONIC STOREPASS KEYPASS PASSIN PASSOUT
    """.split()
)
# A part that holds one of these is a secret word too: PGPASSWORD, HTPASSWD, DBPASSWORD...
_SECRET_INFIXES = ("PASSWORD", "PASSWD", "PASSPHRASE")
# ...and one that starts or ends with one of these: HFTOKEN, CLIENTSECRET, SECRETKEY, AUTHTOKEN, OPENAIAPIKEY.
_SECRET_PREFIXES = ("SECRET", "AUTHTOKEN", "AUTHKEY", "APIKEY", "APITOKEN")
_SECRET_SUFFIXES = ("TOKEN", "SECRET", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "WEBHOOK")
# The words of a password: its value may be several words (``password: correct horse battery staple``).
_PASSWORD_WORDS = frozenset(("PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "PWD", "SSHPASS", "SMBPASS"))
# A name whose last part is one of these names a type, not a variable: ``KeyError: 'weight'``.
_TYPE_WORDS = frozenset(("ERROR", "EXCEPTION", "WARNING", "ERR"))
# A name whose only secret word is TOKEN(S) counts tokens, or names a tokenizer's special token, not a
# credential, when it also has one of these parts: ``max_new_tokens``, ``eos_token``, ``vocab_size``...
_TOKEN_COUNT_WORDS = frozenset(
    """
    PAD EOS BOS UNK CLS SEP MASK SPECIAL ADDITIONAL MAX MIN NUM NEW TOTAL VOCAB START
    END LEN LENGTH COUNT SIZE PER LIMIT BUDGET IMAGE
    """.split()
)
# ...and these only after the token word or with a plural one: ``pad_token_id``, ``input_tokens``, ``token_ids``;
# before a singular one they name whose token it is: ``id_token`` (OIDC), ``INPUT_TOKEN`` (a GitHub Action's input).
_TOKEN_COUNT_AFTER = frozenset("ID IDS PROMPT INPUT OUTPUT GENERATED BATCH SEQ".split())

_PARTS = re.compile(r"[^A-Z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_DIGITS = re.compile(r"[0-9]+\Z")


def _name_parts(name):
    """The upper-case words of a name, camelCase split and trailing digits dropped: hfToken2 -> HF, TOKEN."""
    parts = _PARTS.split(_CAMEL.sub("_", name).upper())
    return [_DIGITS.sub("", part) or part for part in parts if part]


def _secret_part(part, index):
    if part in _SECRET_NAME_WORDS:
        return True
    if part == "PWD":
        return index > 0  # MYSQL_PWD; PWD alone is the working directory
    if part.startswith("AUTH"):  # AUTH_HEADER, AUTHTOKEN; not GIT_AUTHOR_NAME, nor AUTHENTICATION=required
        return not part.startswith(("AUTHOR", "AUTHENTICAT")) or part.startswith("AUTHORIZ")
    return (
        any(word in part for word in _SECRET_INFIXES)
        or part.startswith(_SECRET_PREFIXES)
        or part.endswith(_SECRET_SUFFIXES)
    )


@functools.lru_cache(maxsize=4096)  # the same names come again and again (JSON keys, a report's variables)
def is_secret_name(name):
    """True when a variable's (or a field's, or an option's) name says its value is a secret.

    By its words (``*_TOKEN*``, ``*_SECRET*``, ``*_KEY``, ``*PASSWORD*``, ``*PASSWD*``, ``*_PWD``,
    ``*_CREDENTIALS``, ``*_AUTH*``, ``*_DSN``, ``*_WEBHOOK``, ``*_CONNECTION_STRING``), digits after a word
    changing nothing (``HF_TOKEN2``); but not a count of tokens (``max_new_tokens``), nor a type (``KeyError``).
    """
    parts = _name_parts(name)
    if not parts or parts[-1] in _TYPE_WORDS:
        return False
    secret = [part for index, part in enumerate(parts) if _secret_part(part, index)]
    if not secret:
        if "CONNECTION" in parts and ("STRING" in parts or "STR" in parts):
            return True  # AZURE_STORAGE_CONNECTION_STRING holds an account key
        return name.upper().endswith("KEY")
    if all(part.endswith(("TOKEN", "TOKENS")) for part in secret):
        return not _counts_tokens(parts)
    return True


def _counts_tokens(parts):
    """True when a name whose secret words are all TOKEN(S) counts tokens or names a special one (see above)."""
    if any(part in _TOKEN_COUNT_WORDS for part in parts):
        return True
    first = min(index for index, part in enumerate(parts) if part.endswith(("TOKEN", "TOKENS")))
    plural = any(part.endswith("TOKENS") for part in parts)
    return any(part in _TOKEN_COUNT_AFTER and (plural or index > first) for index, part in enumerate(parts))


@functools.lru_cache(maxsize=4096)
def _is_password_name(name):
    """True when ``name`` says password: its value may be several words."""
    parts = _name_parts(name)
    return any(
        (part in _PASSWORD_WORDS and (part != "PWD" or index > 0)) or any(word in part for word in _SECRET_INFIXES)
        for index, part in enumerate(parts)
    )
