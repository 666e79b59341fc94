"""The regular expressions of ``redact``'s scan: what a credential, a name that says secret and its value look like.

``redact.py`` runs the scan (one pass, in linear time) and masks what these find; the tables of known token formats,
webhook hosts and password options they are built from are ``secret_formats.py``'s. Each alternative either starts
with a literal or may start only where a word starts, and gives up after a bounded number of characters unless it
matches (see ``redact``'s docstring).

Portable (see ``__init__``): stdlib only, Python 3.8+, loaded in the target interpreter too.
"""

import re

from .secret_formats import _HOOKS, _PASSWORD_OPTIONS, _TOKENS

_KEY_TAIL = r"[A-Za-z0-9_\-]{0,80}"  # names are bounded: a failed attempt costs at most this
# A terminal colour code (SGR: ``ESC [1;32m``), as a coloured log puts it around a name or before a value; also
# escaped, as JSON or a repr writes it (``\\u001b[1m``, ``\\x1b[1m``, ``\\033[1m``).
_SGR = r"(?:(?:\x1b|\\u001[bB]|\\x1[bB]|\\033|\\e)\[[0-9;]{0,16}m){0,4}"
# Where a name or a token may start: not inside a word (nor at the n of ``\\n``), but right after an escaped
# newline or tab, as in a repr'd or JSON-escaped string (a traceback's source line, a log that logs JSON). Right
# after a colour code too, but that is the ``sgr`` alternative's to find (a lookbehind for it here, tried at
# every character, would cost the whole scan half again).
_WORD_START = r"(?:(?<![A-Za-z0-9_\-\\])|(?<=\\[nrt]))"
_TOKEN_START = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"
# Words after netrc's ``password`` that make it prose, not a netrc entry ("password authentication failed").
_PROSE = (
    r"(?:for|is|was|are|were|and|or|of|to|the|a|an|in|on|at|by|from|with|must|cannot|can|not|no|required|"
    r"incorrect|invalid|wrong|missing|expired|authentication|auth|prompt|reset|change|changed|field|file|hash|"
    r"manager|policy|protected|length|characters|based|login|via|has|have|did|does|do|will|should|may|set|"
    r"too|mismatch|needed|given|supplied|provided|empty|none|null|true|false)\b"
)
# Between a name and its value: a closing quote (also escaped, at any depth), a bracket, and = or :, not == or ://
_NAME_END = r"\\{0,8}[\"']?\]?" + _SGR + r"[ \t]{0,8}[:=](?![=/:])" + _SGR + r"[ \t]{0,8}" + _SGR
# --name value, --name=value; name=value, name: value...: the flag and pair alternatives below, without where
# they may start, for a name right after a colour code (``ESC[1mHF_TOKEN ESC[0m: X``)
_FLAG = r"(?P<flag>--?(?P<flagname>[A-Za-z]" + _KEY_TAIL + r")(?:=|[ \t]+))"
_PAIR = r"(?P<pair>(?P<name>[A-Za-z_]" + _KEY_TAIL + r")" + _NAME_END + r")"
_AFTER_COLOUR = re.compile(_FLAG + "|" + _PAIR)
_NETRC_ENTRY = r"(?:login|machine|account)[ \t]+[^\s]{1,253}[ \t]+"
_NETRC_PASSWORD = r"(?:[Pp]ass(?:word|wd)|PASS(?:WORD|WD))[ \t]+(?!(?i:" + _PROSE + r"))"
# netrc's ``password X``: after ``login u`` (``machine h login u password X``) or first on its line (a .netrc
# written one keyword a line), but not prose about a password ("password authentication failed"); elsewhere in
# a line only when X does not read as a word: a digit or a symbol in it, or a capital inside it.
_NETRC_ANYWHERE = r"(?=[A-Za-z]{0,80}[0-9_\-+/=!@#$%^*~]|[A-Za-z][a-z]{0,80}[A-Z])"
_NETRC = (
    r"(?:(?<![^\n])|(?<=\\n)|" + _WORD_START + _NETRC_ENTRY + r")[ \t]{0,80}" + _NETRC_PASSWORD + r"(?=[^\s:=])"
    r"|" + _WORD_START + _NETRC_PASSWORD + _NETRC_ANYWHERE
)
_SCAN = re.compile(
    # A PEM private key block; its end is found by the caller, within a bound.
    r"(?P<pem>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)"
    # A URL: its userinfo, webhook path and index path tokens are judged by _url
    r"|(?P<url>://)"
    # A colour code: a name may follow it (see _AFTER_COLOUR)
    r"|(?P<sgr>(?:\x1b|\\(?:u001[bB]|x1[bB]|033|e))\[[0-9;]{0,16}m)"
    r"|(?P<token>" + _TOKEN_START + r"(?:" + "|".join(_TOKENS) + r"))"
    r"|(?P<hook>(?=[hdw])" + _TOKEN_START + r"(?:" + "|".join(_HOOKS) + r"))"
    # --name value, --name=value (a command line that echoes --hf_token ...)
    r"|(?=-)" + _WORD_START + _FLAG + r""
    # -pX: a short option with its value attached (mysql -pX), where its command takes a password so
    r"|(?P<short>" + _WORD_START + r"-(?P<letter>[A-Za-z])(?=[^\s=\-]))"
    # name=value, name: value, "name": "value", os.environ["NAME"] = "value", {\"name\": \"value\"}, {b'name': b'v'}
    r"|" + _WORD_START + _PAIR + r""
    # Bearer X on its own (a curl -H line cut before its header name)
    r"|(?P<bearer>" + _WORD_START + r"(?:[Bb]earer|BEARER)[ \t]+)"
    # a netrc entry (see _NETRC)
    r"|(?P<netrc>(?=[ \tPplma])(?:" + _NETRC + r"))"
    # a C++ mangled name (``undefined symbol: _ZN3c104cuda20CUDACachingAllocator9allocatorE``) is a diagnosis,
    # however random its runs read: kept whole
    r"|(?P<mangled>_(?<![A-Za-z0-9_\\]_)Z[A-Za-z0-9_]+)"
    # a run of letters and digits long enough to be a key: masked when it reads as random (see _random)
    # (not at the n of ``\\n``: a token may follow it)
    r"|(?P<random>(?<![A-Za-z0-9\\])[A-Za-z0-9]{20,}|(?<=\\[nrt])[A-Za-z0-9]{20,})"
)
# The value after a name that says secret: an optional auth scheme kept, then one quoted value or a bare one.
# Quoted: either quote style, also \"escaped\" at any depth (JSON in JSON: ``\\\"`` holding ``\\\\\\\"``), a b/r/u
# string prefix kept (``{b'api_key': b'X'}``). A double-quoted value ends at the next double quote that is not
# escaped, so an apostrophe inside it is part of it (``password="it's-X"``); a single-quoted one ends at a quote
# that no letter or digit follows (``'it's-X'`` is one value). A bare value ends at a space, a quote, an ``&`` or
# an escape (``\\n``): in a repr'd string the next line's name follows it.
_VALUE = re.compile(
    r"(?P<scheme>(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN|[Dd]igest|DIGEST)[ \t]+(?=[^\s]))?"
    r"(?:(?P<prefix>[bBrRuU]{1,2}(?=\\*[\"']))?"
    r"(?:(?P<open>(?P<bs>\\+)\")(?P<quoted>(?:[^\"\n\\]|\\+[^\"\\\n]|(?P=bs)\\+\")*)(?P<close>(?P=bs)\")?"
    r"|(?P<dopen>\")(?P<dquoted>(?:[^\"\n\\]|\\.)*)(?P<dclose>\")?"
    r"|(?P<sopen>\\?')(?P<squoted>(?:[^'\n\\]|\\[^'\n]|'(?=[A-Za-z0-9]))*)(?P<sclose>\\?')?)"
    r"|(?P<bare>(?:[^\s\"'&\\]|\\(?![nrt\"'\\]))+))"
)
# The bare value of a password: words up to the end of the line, a quote or a backquote (Markdown's code) that
# no letter or digit follows (``it's`` is kept together), an ``&`` (a query's next parameter), an escape
# (``\\n``), or a space before what starts the next setting on a command line (``name=``, ``--flag``). Not before
# ``name:``: a password word may end in a colon, and a report may add one after it (``password=correct horse X:
# rank 0``). A password may hold spaces; a token, key or URL never does, so only names that say password take
# more than one word.
_WORD = r"(?:[^\s\"'&\\`]|['`](?=[A-Za-z0-9])|\\(?![nrt\"'\\]))+"
_WORDS = re.compile(_WORD + r"(?:[ \t]+(?!--?[A-Za-z]|[A-Za-z_][A-Za-z0-9_.\-]{0,80}[ \t]{0,8}=)" + _WORD + r")*")
# A login and its password on a command line: ``curl -u alice:X``; the login is kept, it helps support.
_USER_FLAGS = frozenset(("u", "user", "proxy-user", "U"))
_USER_PASSWORD = re.compile(r"(?P<login>[^\s:\"'@/]{1,80}):(?P<password>[^\s\"']+)")
# A login as people choose them (alice, git, oauth2, j.smith); random tokens mix case or run to many digits.
_PLAIN_USER = re.compile(r"[A-Za-z][a-z0-9._\-]{0,23}\Z")
# Passwords that say the user name is the token: GitHub's x-oauth-basic, or an empty one.
_TOKEN_USER_PASSWORDS = frozenset(("", "x-oauth-basic"))
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_HOOK_PATH = re.compile(r"[^\s\"'<>?#\\]+")
# A dtype is a diagnosis, never a credential: a bare value that says one (``float32``, ``torch.bfloat16``,
# ``mostly float16``, ``2 float16``) is kept after any name but a password's. Module paths are names too, and
# their last part often reads as a secret's (``model.embed_tokens``, ``attention.self.key``, ``key_proj``,
# ``token_type_embeddings``): ``model.embed_tokens: float32 (1 tensor, 32.0 KB)`` says which module is in which
# dtype, the one thing a checkpoint audit is for. No key, token or secret is a dtype's name, so this keeps
# nothing a credential could be; a password may be any words, so after one this does not apply.
_DTYPE_VALUE = re.compile(
    r"(?:mostly[ \t]+|[0-9]{1,9}[ \t]+)?(?:torch\.)?"
    r"(?:b?float(?:8_e[0-9a-z]{1,12}|16|32|64)?|half|double|u?int(?:4|8|16|32|64)|bool|complex(?:32|64|128)"
    r"|q(?:u?int8|int32))(?![A-Za-z0-9_\-])"
)
# A prose word after a name that says token or key, not a credential: "token: not a weight file", "key: none".
# Only after a colon, and never after a password's name (a password may be any words).
_INNOCENT = re.compile(r"(?:" + _PROSE + r")(?![\-_./:=@0-9])")

# URLs. userinfo: everything between :// and the last @ before the host (a password may hold a raw @); or, after
# ``user:``, a password that holds a raw / ? or # too, up to the last @ that a host follows (not ``host:8080/``).
_URL_USERINFO = re.compile(r"[^/?#\s\"]{0,1024}@")
_URL_PASSWORD = re.compile(
    r"[^/?#\s\"'<>@:]{0,256}:(?![0-9]{0,5}(?:[/?#\s\"'<>]|\Z))[^\s\"'<>]{0,1024}@(?=[A-Za-z0-9\[])"
)
_URL_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]{0,64}\]|[A-Za-z0-9.\-_~%]{0,253})(?::[0-9]{0,5})?")
_URL_PATH = re.compile(r"(?:/[^/\s\"'<>?#\\`]{0,256}){0,32}")
# Webhook hosts (as _HOOKS, with a subdomain: acme.webhook.office.com), and a webhooks/ or hooks/ directory in any
# URL: the rest of the path is the secret.
_HOOK_HOST = re.compile(r"(?:[A-Za-z0-9\-]{1,63}\.){0,4}?(?:" + "|".join(_HOOKS) + r")")
_HOOK_DIRS = frozenset(("webhook", "webhooks", "hooks"))

# The commands whose options take a password (_PASSWORD_OPTIONS), where a word may start; the value attached
# to a short option (``-pX``); the subcommands an option takes a password after.
_COMMANDS = re.compile(
    r"(?<![A-Za-z0-9_.\-])(" + "|".join(re.escape(c) for c in sorted(_PASSWORD_OPTIONS, key=len, reverse=True)) + ")"
    r"(?![A-Za-z0-9_.\-])"
)
_ATTACHED = re.compile(r"[^\s\"']{1,256}")
_SUBCOMMANDS = {name: re.compile(r"(?<![A-Za-z0-9_\-])" + name + r"(?![A-Za-z0-9_\-])") for name in ("login",)}
# A run of colour codes, skipped before a value is judged.
_SGR_RUN = re.compile(_SGR)
