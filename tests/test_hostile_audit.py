"""`mpdoctor audit FOLDER` reads inside FOLDER only, and never prints a file's bytes as a number (issue 40, item 7).

A symlinked weight file, a symlinked subfolder, an index entry with ``..`` or an absolute path, a
model_index.json component named ``..`` or absolutely: each once made the audit read outside the folder (a
token file named ``leak.safetensors`` came back as "the header claims 4995128901737866856 bytes": ``hf_SECRE``).
Now each is listed unread, with why, and the folder's own checkpoint is still judged. A file the user names
is read wherever a link leads. The folders come from ``adversarial.round3.escaping_folders``.
"""

from __future__ import annotations

import json
import os
import struct

import pytest

from adversarial.round3 import escaping_folders, secret_file, tiny_safetensors
from adversarial.running import assert_clean, mpdoctor
from mpdoctor.checkpoint_audit.layout import layout
from mpdoctor.checkpoint_audit.safetensors import AuditError, read_header

SECRET = "hf_SECRETtokenvalue1234567890"


def as_number(text: str) -> str:
    """What the old message printed: the first 8 bytes of ``text`` as a little-endian integer."""
    return str(struct.unpack("<Q", text.encode()[:8])[0])


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return list(escaping_folders(root / "in", root / "outside"))


def test_every_way_out_of_the_folder_is_listed_unread_and_never_followed(folders):
    """In-process (the grouping itself): no path outside the folder is among the files to read."""
    for how, folder in folders:
        found = layout(str(folder))
        real = os.path.realpath(folder)
        to_read = [f.path for f in found.files() if not f.error]
        assert to_read and all(os.path.realpath(p).startswith(real + os.sep) for p in to_read), (how, to_read)
        said = [u.why for u in found.unread] + [f.error for f in found.files() if f.error]
        assert any("outside the model folder" in why for why in said), (how, said)


def test_the_cli_never_shows_the_outside_files_bytes(folders):
    for how, folder in folders[:1] + folders[-1:]:  # the token file behind a link; a component by absolute path
        result = mpdoctor("audit", str(folder), "--format", "json")
        assert_clean(result, 0, 1)
        assert SECRET not in result.stdout + result.stderr and as_number(SECRET) not in result.stdout, how
        assert "outside the model folder" in result.stdout, (how, result.stdout[-2000:])
        report = json.loads(result.stdout)
        assert report["checkpoints"], how  # the folder's own checkpoint is still judged


@pytest.mark.parametrize("seed", range(4))
def test_a_header_length_is_never_printed_from_text(seed, tmp_path):
    """A text file named *.safetensors, given by name (so read): the error says what it is, not its bytes."""
    text = f"hf_{seed}{'SECRET' * (seed + 1)}abc"
    path = tmp_path / "named.safetensors"
    path.write_text(text)
    with pytest.raises(AuditError) as caught:
        read_header(str(path))
    assert as_number(text) not in str(caught.value) and "not a safetensors file" in str(caught.value)


def test_a_file_the_user_names_is_read_wherever_its_link_leads(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    weights = tiny_safetensors(tmp_path / "elsewhere" / "w.safetensors")
    os.symlink(weights, tmp_path / "named.safetensors")
    found = layout(str(tmp_path / "named.safetensors"))
    assert [f.error for f in found.files()] == [""]


def test_a_huggingface_cache_snapshot_reads_its_own_blobs(tmp_path):
    """snapshots/<rev>/model.safetensors -> ../../blobs/<sha>: the cache's own layout is not "outside"."""
    repo = tmp_path / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    tiny_safetensors(repo / "blobs" / "0123abcd")
    os.symlink("../../blobs/0123abcd", repo / "snapshots" / "abc123" / "model.safetensors")
    secret = secret_file(tmp_path / "home")
    os.symlink(secret, repo / "snapshots" / "abc123" / "extra.safetensors")
    found = layout(str(repo / "snapshots" / "abc123"))
    assert [os.path.basename(f.path) for f in found.files() if not f.error] == ["model.safetensors"]
    assert [os.path.basename(u.path) for u in found.unread] == ["extra.safetensors"]
