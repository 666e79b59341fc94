"""Generators of the hostile inputs of issue 40 (round three): forged fleet verdicts, junk in the store, a
flooding child, oversized distribution metadata and step lines, model folders that point outside themselves.

Each generator makes a family of inputs from a few parameters (a size, a seed, a shape), so a test holds
mpdoctor to the class of input, not to one string. Stdlib only, except ``Rogue`` (a real torch TCPStore client).
"""

from __future__ import annotations

import json
import os
import random
import secrets
import struct
from datetime import timedelta
from pathlib import Path
from typing import Iterator

# ---------------------------------------------------------------- the fleet's store


def forged_verdicts(rank: int, seed: int = 0, stolen: str = "") -> Iterator[dict]:
    """Verdicts a store writer could post for ``rank``: every shape says "nothing to fix", in fields an older
    mpdoctor read (``summary``) and in today's (counts, nonce), without a nonce, with a random one, or with
    ``stolen`` (another rank's)."""
    rng = random.Random(seed)
    words = ["nothing to fix", "all ranks agree", "(forged)", "\x1b]0;owned\x07"]
    for nonce in (None, "", secrets.token_hex(16), "0" * 32, stolen or secrets.token_hex(16), "not hex at all"):
        ranks = rng.randint(2, 4096)
        verdict = {
            "worst": rng.choice([None, "info"]),
            "summary": f"{ranks} ranks agree; " + " ".join(rng.sample(words, 3)),
            "ranks": ranks,
            "agree": ranks,
            "differ": 0,
            "absent": 0,
        }
        if nonce is not None:
            verdict["nonce"] = nonce
        yield verdict


def forged_keys(rank: int) -> list[str]:
    """Where a writer who knows the protocol puts a verdict for ``rank``: the one key older versions read, and
    the rank's own."""
    return ["verdict", f"verdict/{rank}"]


def junk(size: int, seed: int = 0) -> bytes:
    """``size`` bytes that look like what a counter or the arrivals list holds (digits and commas), so only
    their size gives them away."""
    rng = random.Random(seed)
    unit = ",".join(str(rng.randrange(10**8)) for _ in range(64)).encode() + b","
    return (unit * (size // len(unit) + 1))[:size]


class Rogue:
    """A client of the run's real TCPStore that is no rank: it writes what it likes under the run's keys."""

    def __init__(self, port: int, run: str) -> None:
        from torch.distributed import TCPStore

        self.store = TCPStore("127.0.0.1", port, None, False, timedelta(seconds=30))
        self.prefix = f"mpdoctor-fleet/{run}/"

    def set(self, key: str, value) -> None:
        self.store.set(self.prefix + key, value if isinstance(value, (bytes, str)) else json.dumps(value))

    def append(self, key: str, value: bytes, chunk: int = 1 << 20) -> None:
        """Grow ``key`` by appends, as the issue's junk grew (``chunk`` bytes at a time)."""
        for start in range(0, len(value), chunk):
            self.store.append(self.prefix + key, value[start : start + chunk])

    def forge(self, rank: int, verdict: dict) -> None:
        for key in forged_keys(rank):
            self.set(key, verdict)

    def get(self, key: str) -> bytes:
        return self.store.get(self.prefix + key)

    def has(self, key: str) -> bool:
        return bool(self.store.check([self.prefix + key]))


# ---------------------------------------------------------------- a flooding child


def flood_source(rate_mb: int = 64, stream: str = "stdout", last_line: str = '{"ok": true}') -> str:
    """A Python program that writes ``rate_mb`` MB of lines to ``stream`` as fast as it can, then its result on
    its last line, then keeps flooding until killed: a `--python` whose startup prints in a loop."""
    return (
        "import sys, time\n"
        f"out = sys.{stream}.buffer\n"
        "line = (b'x' * 1023) + b'\\n'\n"
        f"for _ in range({rate_mb} * 1024):\n"
        "    out.write(line)\n"
        "out.flush()\n"
        f"out.write({last_line!r}.encode() + b'\\n')\n"
        "out.flush()\n"
        "if len(sys.argv) > 1:\n"
        "    while True:\n"
        "        out.write(line * 64)\n"
    )


# ---------------------------------------------------------------- target data


def dist_info(site: Path, name: str, version: str, requires: list[str], summary: str = "x") -> Path:
    """A dist-info directory as pip writes one, with whatever Name, Version and Requires-Dist given."""
    folder = site / f"{name[:40].replace('-', '_')}-0.dist-info"
    folder.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (folder / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "INSTALLER").write_text("pip\n")
    return folder


def oversized(bound: int, seed: int = 0, factor: int = 3) -> str:
    """A version-like string ``factor`` times longer than ``bound``: digits and dots, as a version looks."""
    rng = random.Random(seed)
    text = ".".join(str(rng.randrange(1000)) for _ in range(bound * factor // 2))
    return text[: bound * factor]


def step_lines(path: Path, big: int, seed: int = 0) -> None:
    """A step file with a good step, one line of ``big`` bytes, then more good steps and ``done``."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"step": "before", "data": rng.randrange(100)}) + "\n")
        handle.write('{"step": "huge", "data": "' + "y" * big + '"}\n')
        handle.write(json.dumps({"step": "after", "data": "ok"}) + "\n")
        handle.write(json.dumps({"step": "done", "data": None}) + "\n")


# ---------------------------------------------------------------- model folders that point outside


def secret_file(folder: Path, text: str = "hf_SECRETtokenvalue1234567890") -> Path:
    """A file outside the model folder that must never be read, as a token file is."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "token"
    path.write_text(text)
    return path


def tiny_safetensors(path: Path, name: str = "w") -> Path:
    """A valid one-tensor .safetensors file (fp16, 2 elements)."""
    header = json.dumps({name: {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00" * 4)
    return path


def escaping_folders(root: Path, outside: Path) -> Iterator[tuple[str, Path]]:
    """Model folders, each reaching ``outside`` (a folder holding a secret and a weight file) one way: a symlinked
    weight file, a symlinked subfolder, an index entry with ``..`` or an absolute path, a model_index.json
    component named ``..`` or absolutely. Yields (how, folder)."""
    secret = secret_file(outside)
    weights = tiny_safetensors(outside / "outside.safetensors")

    def fresh(how: str) -> Path:
        folder = root / how
        folder.mkdir(parents=True)
        tiny_safetensors(folder / "model.safetensors")
        return folder

    folder = fresh("symlinked-file")
    os.symlink(secret, folder / "leak.safetensors")
    yield "a symlinked weight file", folder

    folder = fresh("symlinked-subfolder")
    os.symlink(outside, folder / "sub")
    yield "a symlinked subfolder", folder

    for how, target in (("dotdot", os.path.relpath(weights, root / "index-dotdot")), ("absolute", str(weights))):
        folder = root / f"index-{how}"
        folder.mkdir(parents=True)
        tiny_safetensors(folder / "model-00001-of-00002.safetensors")
        index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": target}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        yield f"an index entry ({how})", folder

    for how, component in (("dotdot", os.path.relpath(outside, root / "pipeline-dotdot")), ("absolute", str(outside))):
        folder = root / f"pipeline-{how}"
        folder.mkdir(parents=True)
        (folder / "unet").mkdir()
        tiny_safetensors(folder / "unet" / "diffusion_pytorch_model.safetensors")
        (folder / "model_index.json").write_text(json.dumps({"unet": ["diffusers", "X"], component: ["x", "Y"]}))
        yield f"a model_index.json component ({how})", folder
