"""A weight file as the audit carries it, and the small JSON files that say which weight files belong together."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mpdoctor.checkpoint_audit.safetensors import AuditError, TensorEntry
from mpdoctor.portable import files as safe_files, limits

SAFETENSORS = (".safetensors",)
PICKLES = (".pt", ".pth", ".bin", ".ckpt")
MAX_INDEX = limits.AUDIT_INDEX  # an index or model_index.json: a few MB at most for the largest models


@dataclass
class WeightFile:
    """One weight file and what reading it gave."""

    path: str
    component: str = ""  # the diffusers component (unet, text_encoder, ...) it belongs to
    format: str = ""  # safetensors or pickle
    tensors: Sequence[TensorEntry] = field(default_factory=list)  # a TensorTable from the bulk header reader
    error: str = ""
    cause: str = ""  # REFUSED (weights_only refused a pickle), NO_TORCH (nothing to read it with), NO_TEMP, BOMB or ""
    memory: int = 0  # bytes torch.load may hold for it: its size, or what a zip's pickle inflates to when more
    # A training checkpoint's model copies, (key, role, start, stop) of ``tensors`` each (``containers.py`` makes
    # each a checkpoint of its own), and its entries that are not model weights, (key, role, tensors, bytes).
    copies: list[tuple[str, str, int, int]] = field(default_factory=list)
    skipped: list[tuple[str, str, int, int]] = field(default_factory=list)


def json_file(path: Path, what: str) -> object:
    """A small JSON file (an index, model_index.json), read as files.py reads: regular, bounded, depth-limited."""
    try:
        return safe_files.json_value(safe_files.read_bytes(str(path), MAX_INDEX))
    except safe_files.Refused as exc:
        raise AuditError(f"{path}: not {what}: it is {exc.why}") from None
    except OSError as exc:
        raise AuditError(f"{path}: not {what}: {exc.strerror or exc}") from None
    except ValueError as exc:  # not UTF-8, not JSON, nested too deeply
        raise AuditError(f"{path}: not {what} ({exc})") from None
