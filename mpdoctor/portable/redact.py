"""Secret redaction, shared by the environment probe and every renderer.

This module must stay stdlib-only and importable by old interpreters (3.8+):
the environment probe loads it into the *target* interpreter, which may be any
Python the user points ``--python`` at.

Three layers, all applied by default:

* by name: an environment variable whose name says it holds a secret
  (``HF_TOKEN``, ``HF_TOKEN2``, ``WANDB_API_KEY``, ``PGPASSWORD``, ``MYSQL_PWD``,
  ``AWS_SECRET_ACCESS_KEY``... see ``is_secret_name``) has its value replaced
  whole, at collection time, so the secret never leaves the target process;
* by value: the value of every such variable in the process that redacts (the probe in the target
  interpreter, mpdoctor on the host) is masked wherever it appears in any string that reaches a report, in
  whatever shape: a torch whose import fails with a message that quotes ``WANDB_API_KEY``'s value, a
  40-character lowercase hex key no shape could tell from a hash, leaks nothing (values of at least
  ``MIN_SECRET_VALUE`` characters: a variable set to ``1`` or ``true`` is no secret to look for);
* by shape: any string that reaches a report is scanned for credentials in URLs
  (``https://user:<password>@``, a password holding ``/ # ? @`` too, ``https://<token>@``),
  a token in a package index's URL path (``/basic/<token>/pypi/simple``, Anaconda's
  ``/t/<token>/``, ``pypi.fury.io/<token>/``: a segment that reads as random, in a URL
  that names an index by its host, its path or the option before it), webhook URLs
  whose path is the secret (Slack, Discord, Teams, any ``.../webhook/...``),
  ``NAME=value``, ``NAME: value``, ``"name": "value"``, ``{b'name': b'value'}``,
  ``--name value`` (a colour code between name and value changes nothing),
  ``curl -u login:password``, the password options of the commands that take one
  (``docker login -p X``, ``mysql -pX``, ``sshpass -p X``, ``redis-cli -a X``),
  netrc's ``password value`` and ``Authorization: Bearer value`` where the name
  says secret, private key blocks, the token formats of the major providers, and,
  whatever surrounds it, a run of 20 or more letters and digits that reads as random
  (upper and lower case and digits, changing often: a key of no known format).

What is masked after a name: a quoted value whole, up to its own closing quote
(``password="it's-X"``); a bare one to the next space, except after a name that
says password, whose value may be several words and runs to the end of the line
(or a closing quote, an ``&``, or the next ``name=`` or ``--flag``), since
``password: correct horse battery staple`` is one password. A prose word after a name
that says token or key, not a password, is no value (``token: not a weight file``). Versions, paths,
package names, GPU UUIDs and dtypes are left alone: a diagnosis needs them. A dtype
stays even after a name that says secret (``attention.self.key: float32``, a module
path in a checkpoint audit, is no credential; see ``_DTYPE_VALUE``).

The scan is one pass of one regular expression over the text, in linear time:
every alternative either starts with a literal, or may start only where a word
starts, and gives up after a bounded number of characters unless it matches, and
a match is consumed. A value is read only after a name that says secret, so
nothing is scanned twice, but for a bounded part once more: a URL's host and the path
segments before its last index token (each at most 256 characters, holding no ``/``),
and a password option's command, looked for at most 256 characters back on its line
(each character of a line searched once, however many options it holds). ``redact_clip`` redacts *before* it cuts, so a cut can
never leave the first characters of a token behind. The scan's regular expressions are
``secret_patterns.py``'s; this module runs the pass and masks what they find.
"""

import os
import re

from .secret_formats import _PASSWORD_OPTIONS
from .secret_patterns import (
    _AFTER_COLOUR,
    _ATTACHED,
    _COMMANDS,
    _DTYPE_VALUE,
    _HOOK_DIRS,
    _HOOK_HOST,
    _HOOK_PATH,
    _INNOCENT,
    _PEM_END,
    _PLAIN_USER,
    _SCAN,
    _SGR_RUN,
    _SUBCOMMANDS,
    _TOKEN_USER_PASSWORDS,
    _URL_HOST,
    _URL_PASSWORD,
    _URL_PATH,
    _URL_USERINFO,
    _USER_FLAGS,
    _USER_PASSWORD,
    _VALUE,
    _WORDS,
)
from .secret_shapes import _is_index, _random, _tokenish
from .secret_names import _is_password_name, is_secret_name

REDACTED = "<redacted>"
MIN_SECRET_VALUE = 6  # shorter values of secret variables are flags and switches, not secrets looked for in text

PEM_WINDOW = 65536  # a private key block is a few KB; an unterminated one is masked this far
# Characters redacted beyond a cut: enough for a token or URL that starts before the cut to be recognised whole.
CLIP_MARGIN = 4096


def _url(text, start, out):
    """Mask the credentials of the URL whose ``://`` ends at ``start``; return where scanning goes on.

    Its userinfo (a plain user name kept); the path of a webhook URL (the path is the secret); a path segment
    that reads as a token in a package index's URL (``/basic/<token>/pypi/simple``, Anaconda's
    ``/t/<token>/``, ``pypi.fury.io/<token>/``), and after ``/t/`` in any URL. Its query is left to the caller's
    scan (``?access_token=X`` is a name and a value). Each part is bounded, so a URL costs a bounded scan.
    """
    pos = start
    found = _URL_PASSWORD.match(text, pos) or _URL_USERINFO.match(text, pos)
    if found:
        out.append(_userinfo(text[pos : found.end() - 1]) + "@")
        pos = found.end()
    hook = _HOOK_HOST.match(text, pos)
    host = _URL_HOST.match(text, pos)
    path = _URL_PATH.match(text, host.end())
    segments = path.group(0).split("/")[1:]
    lowered = [segment.lower() for segment in segments]
    cut = next((index for index, segment in enumerate(lowered[:9]) if segment in _HOOK_DIRS), None)
    if hook or cut is not None:
        head = hook.end() if hook else host.end() + sum(len(segment) + 1 for segment in segments[: cut + 1]) + 1
        out.append(text[pos:head])
        rest = _HOOK_PATH.match(text, head)
        if rest:
            out.append(REDACTED)
            return rest.end()
        return head
    line = text.rfind("\n", max(0, start - 80), start)
    before = text[max(line + 1, start - 80) : max(line + 1, start - 3)]
    index = _is_index(host.group(0), lowered, before)
    masked = [
        (index or (number > 0 and lowered[number - 1] == "t")) and _tokenish(segment)
        for number, segment in enumerate(segments)
    ]
    if not any(masked):
        return pos  # the host and path are scanned as any text is
    # up to the last token, what is not masked is scanned as any text is: a host or a segment is bounded and holds
    # no ``/``, so this scans each character once more, and recurses no deeper; after it, the caller's scan goes on,
    # and from a segment that holds a secret of its own (``/api_key=X/``) too, whose value may run over slashes
    last = max(number for number, mask in enumerate(masked) if mask)
    out.append(redact_text(host.group(0)))
    at = host.end()
    for segment, mask in zip(segments[: last + 1], masked):
        if not mask and redact_text(segment) != segment:
            return at
        out.append("/" + (REDACTED if mask else segment))
        at += len(segment) + 1
    return at


_COMMAND_WINDOW = 256  # how far back on its line an option's command is looked for


class _Commands:
    """The last command of _PASSWORD_OPTIONS seen before a point of one text: each character is searched once, as
    the scan moves on, so that a line of a thousand options costs no more than a line of one."""

    def __init__(self, text):
        self.text, self.upto, self.last = text, 0, None

    def options(self, at):
        """The option letters that take a password (next word, attached) in the command before ``at`` on its line."""
        text = self.text
        low = max(0, at - _COMMAND_WINDOW)
        line = text.rfind("\n", low, at)
        low = max(low, line + 1)
        for found in _COMMANDS.finditer(text, max(self.upto, low), at):
            self.last = found
        self.upto = max(self.upto, at)
        if self.last is None or self.last.start() < low:
            return "", ""
        separate, attached, subcommand = _PASSWORD_OPTIONS[self.last.group(1)]
        if subcommand and _SUBCOMMANDS[subcommand].search(text, self.last.end(), at) is None:
            return "", ""
        return separate, attached


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


def _value(text, start, out, words=False):
    """Mask the value that starts at ``start`` (after a secret name); return where scanning goes on.

    With ``words`` (a name that says password), a bare value runs over several words (see ``_WORDS``).
    """
    found = _VALUE.match(text, start)
    if found is None:
        return start
    if found.group("scheme"):
        out.append(found.group("scheme"))
    if found.group("bare") is not None:
        more = _WORDS.match(text, found.start("bare")) if words else None
        out.append(REDACTED)
        return more.end() if more else found.end()
    for opener, closer in (("open", "close"), ("dopen", "dclose"), ("sopen", "sclose")):
        if found.group(opener) is not None:
            out.append((found.group("prefix") or "") + found.group(opener) + REDACTED + (found.group(closer) or ""))
    return found.end()


def _skip_sgr(text, pos):
    return _SGR_RUN.match(text, pos).end()


def _short_password(commands, found, out):
    """For ``-p X`` or ``-pX`` where the command takes a password there (``docker login -p X``, ``mysql -pX``):
    append the option (and the mask of an attached value) and return True; else append nothing, return False."""
    flag = found.group("flagname")
    separate, attached = commands.options(found.start())
    if len(flag) == 1 and flag in separate and not found.group(0).endswith("="):
        out.append(found.group(0))
        return True
    if (flag[0] in attached and len(flag) > 1) or (flag in separate + attached and found.group(0).endswith("=")):
        out.append("-" + flag[0] + REDACTED)
        return True
    return False


_known = {"env": None, "pattern": None}


def _known_values():
    """One pattern of the values of this process's secret variables (longest first, so a value holding another is
    masked whole), or None; rebuilt only when the environment changed."""
    # os.environ's own dict (CPython's, encoded) is compared in C: a redaction of a short string costs ~1.5 us more,
    # where decoding every variable on each call would cost ~15 us
    raw = getattr(os.environ, "_data", None)
    env = tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())
    if env != _known["env"]:
        items = os.environ.items()
        values = {value for name, value in items if len(value) >= MIN_SECRET_VALUE and is_secret_name(name)}
        ordered = sorted(values, key=len, reverse=True)
        _known["env"] = env
        _known["pattern"] = re.compile("|".join(re.escape(value) for value in ordered)) if ordered else None
    return _known["pattern"]


def redact_text(text):
    """Mask the values of this process's secret variables, then credentials found by shape, in free text, in
    linear passes."""
    if not text:
        return text
    known = _known_values()
    if known is not None:
        text = known.sub(REDACTED, text)
    out, pos, search, commands = [], 0, _SCAN.search, _Commands(text)
    while True:
        found = search(text, pos)
        if found is None:
            break
        out.append(text[pos : found.start()])
        kind = found.lastgroup
        if kind == "sgr":
            out.append(found.group(0))
            pos = found.end()
            named = _AFTER_COLOUR.match(text, pos)
            if named is None:
                continue
            found, kind = named, named.lastgroup
        if kind == "token":
            out.append(REDACTED)
            pos = found.end()
        elif kind == "mangled":
            out.append(found.group(0))
            pos = found.end()
        elif kind == "random":
            out.append(REDACTED if _random(found.group(0)) else found.group(0))
            pos = found.end()
        elif kind == "url":
            out.append("://")
            pos = _url(text, found.end(), out)
        elif kind == "short":
            out.append(found.group(0))
            pos = found.end()
            if found.group("letter") in commands.options(found.start())[1]:
                value = _ATTACHED.match(text, pos)
                out.append(REDACTED)
                pos = value.end()
        elif kind == "flag" and not found.group(0).startswith("--") and _short_password(commands, found, out):
            if len(found.group("flagname")) == 1 and not found.group(0).endswith("="):
                pos = _value(text, found.end(), out)
            else:  # -pX: the value runs from the option's letter to the next space or quote
                pos = _ATTACHED.match(text, found.start("flagname") + 1).end()
        elif kind == "hook":
            out.append(found.group(0))
            pos = found.end()
            path = _HOOK_PATH.match(text, pos)
            if path:
                out.append(REDACTED)
                pos = path.end()
        elif kind == "pem":
            end = _PEM_END.search(text, found.end(), found.end() + PEM_WINDOW)
            out.append(REDACTED)
            pos = end.end() if end else min(len(text), found.end() + PEM_WINDOW)
        elif kind == "flag" and found.group("flagname") in _USER_FLAGS:
            out.append(found.group(0))
            pos = found.end()
            login = _USER_PASSWORD.match(text, pos)
            if login:
                out.append(login.group("login") + ":" + REDACTED)
                pos = login.end()
        else:
            out.append(found.group(0))
            pos = found.end()
            name = found.group("name") or found.group("flagname")
            if kind in ("bearer", "netrc"):
                pos = _value(text, pos, out)
            elif is_secret_name(name):
                words = kind == "pair" and _is_password_name(name)
                if kind == "pair" and not words and _DTYPE_VALUE.match(text, pos):
                    continue  # ``attention.self.key: float32``: a module's dtype, not a key's value
                if kind == "pair" and not words and "=" not in found.group(0)[len(name) :]:
                    if _INNOCENT.match(text, _skip_sgr(text, pos)):
                        continue  # "token: not a weight file": prose, not a token's value
                pos = _value(text, pos, out, words=words)
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
