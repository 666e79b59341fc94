"""Reading /proc cheaply (stdlib only, Python 3.8+): for the load samples and mpdoctor's process family.

Every reader answers None (or no fields) where /proc does not tell, and never raises.
"""

import os


def read(path):
    """A /proc file's text; None when it cannot be read. os.read: a third of open()'s cost per sample."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode("latin-1")  # never fails; the fields read are ASCII
    except OSError:
        return None
    finally:
        os.close(fd)


def stat_fields(text):
    """The fields of a /proc/*/stat line after the command name (which may hold spaces)."""
    return text[text.rfind(")") + 2 :].split() if text and ")" in text else []
