"""The fast project scan reports exactly what a parse of every flagged file reports (issue 23).

``project_uses`` now decides with byte searches which readers a file needs, parses
only files whose key words stand in code, and then only the statements around them
(``mpdoctor/probes/remote/windows.py``). ``reference_uses`` below is the scan as it
was before: the same regular-expression gates, ``ast.parse`` of the whole file. Both
run on real files in real directories: a tree of hand-written odd cases, a seeded
random tree that puts uses at every depth, and the source of the installed torch
(thousands of real files, hundreds of AMP uses). The answers must be equal, down to
the line each use is reported at and the notes on skipped files.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import random
import subprocess
from pathlib import Path

import pytest
from interpreters import find_python

from mpdoctor.probes.child import LOAD_PACKAGES, package_inits
from mpdoctor.probes.remote import listing, scan, windows

PYTHON38 = Path(find_python("3.8") or "python3.8")  # on PATH or in pyenv; a relative name that exists nowhere if none


def reference_files(top: str, max_files: int):
    """The listing before issue 23: os.walk, sorted, environments and hidden directories skipped."""
    found, stopped = [], ""
    for root, dirs, names in os.walk(top):
        dirs[:] = sorted(name for name in dirs if not listing.skip_directory(root, name))
        found += [os.path.join(root, name) for name in sorted(names) if name.endswith(".py")]
        if len(found) > max_files:
            stopped = "files after the first %d: not listed, the scan reads at most %d" % (max_files, max_files)
            break
    return found[:max_files], stopped


def reference_uses(top: str, max_files: int = 3000) -> dict:
    """The scan before issue 23: regex gates, then ``ast.parse`` of each flagged file, whole."""
    facts = {
        "root": top,
        "files_scanned": 0,
        "truncated": False,
        "apex_uses": [],
        "torch_amp_uses": [],
        "oneflow_uses": [],
        "amp_sites": [],
        "skipped_files": [],
    }
    paths, stopped = reference_files(top, max_files)
    for path in paths:
        relative = os.path.relpath(path, top)
        source = scan._read(path, facts["skipped_files"], relative)
        if source is None:
            continue
        facts["files_scanned"] += 1
        has_apex = b"apex" in source and scan.APEX_IMPORT.search(source)
        has_amp = scan.TORCH_AMP.search(source)
        has_oneflow = scan.ONEFLOW.search(source)
        has_paths = has_apex or has_amp or b"clip_grad_" in source or b"import amp" in source
        if not (has_apex or has_amp or has_oneflow or has_paths):
            continue
        tree = scan._parse(source, path, facts["skipped_files"], relative)
        if tree is None:
            continue
        # numbered as the parser numbers them: a form feed or a NEL is inside a line, not the end of one
        lines = source.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if has_apex:
            facts["apex_uses"] += [dict(use, file=relative) for use in scan.apex_imports(tree, lines)]
        if has_amp:
            facts["torch_amp_uses"] += [dict(use, file=relative) for use in scan.torch_amp_uses(tree, lines)]
        if has_oneflow:
            facts["oneflow_uses"] += [dict(use, file=relative) for use in scan.oneflow_uses(tree, lines)]
        if has_paths:
            facts["amp_sites"] += [dict(use, file=relative) for use in scan.amp_sites(tree, lines, source)]
    if stopped:
        facts["truncated"] = True
        facts["skipped_files"].append(stopped)
    return facts


def assert_same(top: Path, max_files: int = 3000) -> dict:
    fast = scan.project_uses(str(top), 600.0, max_files=max_files)
    slow = reference_uses(str(top), max_files=max_files)
    for key, _ in scan.READERS:
        slow[key] = slow[key][: scan.USE_LIMITS.get(key, scan.MAX_USES)]
    slow["skipped_files"] = slow["skipped_files"][: scan.MAX_SKIPPED]
    for key in slow:
        assert fast[key] == slow[key], key
    return fast


ODD = {
    # decorators, on functions, methods and classes
    "decorated.py": "import torch\n\n@torch.autocast('cuda')\ndef f():\n    pass\n\n\nclass A:\n    @staticmethod\n"
    "    @torch.cuda.amp.custom_fwd\n    def g(x):\n        return torch.cuda.amp.GradScaler()\n\n\n"
    "@torch.autocast(\n    'cpu',\n)\nclass B:\n    x = 1\n",
    # multi-line calls and imports, backslash continuations, a use on a line of its own inside brackets
    "multiline.py": "from apex import (\n    amp,\n    optimizers,\n)\nimport torch, \\\n    apex.amp\n"
    "x = dict(\ntorch.autocast,\n)\ny = (torch\n     .cuda\n     .amp\n     .GradScaler)()\n"
    "from torch.cuda.amp import (\n    autocast as ac,  # comment\n)\n",
    # strings and comments that only look like uses, next to one real use
    "lookalike.py": '"""Module doc.\n\nfrom apex import amp\nimport oneflow\ntorch.autocast\n"""\n'
    "# from apex import amp\n# torch.cuda.amp.GradScaler()\n"
    "s = 'torch.autocast(\"cuda\")'\nt = '''\nfrom apex import amp\n'''\n"
    "def h():\n    '''torch.autocast'''\n    return 'oneflow_compile(x)'\n"
    "r = rb'\\autocast'\nmaybe_autocast = 1\nautocast_enabled = torch.is_autocast_enabled()\n",
    "only_strings.py": "'''We do not use torch.autocast here, nor from apex import amp.'''\n# autocast\n",
    # an f-string holds code: its braces are parsed, and the reference reports them
    "fstring.py": "import torch\nmsg = f'{torch.autocast} and {x!r}'\nother = f\"plain autocast text\"\n",
    # the blocks around an apex import: try, def, if, else, except, finally, with, class bodies
    "contexts.py": "try:\n    import apex\nexcept ImportError:\n    from apex import amp\nelse:\n    pass\n"
    "finally:\n    import apex.normalization\n\nif x:\n    pass\nelif y:\n    import apex.fp16_utils\n"
    "else:\n    import apex.parallel\n\n\ndef lazy():\n    from apex import amp\n    return amp\n\n\n"
    "class C:\n    import apex\n\n    def m(self):\n        if self:\n            from apex import amp\n"
    "\n    class Inner:\n        from apex.amp import scale_loss\n\nwith ctx:\n    import apex\n"
    "for i in range(3):\n    pass\nelse:\n    import apex.optimizers\n",
    # one spelling twice: the reference reports the first in breadth-first order (the shallower one)
    "depth.py": "import torch\n\ndef deep():\n    if True:\n        with torch.autocast('cuda'):\n            pass\n\n"
    "class K:\n    def m(self):\n        return torch.autocast('cpu')\n\n"
    "ctx = torch.autocast('cpu')\nscaler = torch.cuda.amp.GradScaler()\n",
    # OneFlow: an alias used far from its import, a compile backend spelt in two pieces
    "flow.py": "import oneflow as flow\nfrom onediff.infer_compiler import oneflow_compile\n\n\n"
    "class P:\n    def run(self, m):\n        with flow.autocast('cuda'):\n            pass\n"
    "        m = torch.compile(m, backend='one' 'flow')\n        return oneflow_compile(m)\n",
    "crlf.py": "import torch\r\nclass A:\r\n    def f(self):\r\n        return torch.autocast('cuda')\r\n",
    "tabs.py": "import torch\nclass A:\n\tdef f(self):\n\t\treturn torch.autocast('cuda')\n\tdef g(self):\n\t\tpass\n",
    "formfeed.py": "import torch\n\x0c\ndef f():\n    return torch.autocast('cuda')\n",
    "semicolons.py": "import os; import apex; x = torch.autocast\n",
    "async_match.py": "import torch\nasync def f():\n    async with torch.autocast('cuda'):\n        pass\n"
    "match x:\n    case 1:\n        from apex import amp\n",
    # tests for apex before an import: flags set far from it (from a string naming apex), guarded imports' names,
    # a statement that leaves, and a class that cannot exist without apex whose callers hold no key word
    "apex_tests.py": "import importlib.util\nok = importlib.util.find_spec('apex') is not None\n"
    'HAS = RequirementCache("apex.amp")\n\n\ndef f():\n    if ok:\n        from apex import amp\n\n\n'
    "try:\n    from apex import amp\nexcept ImportError:\n    amp = None\nif amp is not None:\n"
    "    import apex.parallel\nif not _APEX_AVAILABLE:\n    raise ImportError('apex')\nimport apex.RNN\n\n\n"
    "def g():\n    if HAS:\n        from apex import fp16_utils\n",
    "apex_class.py": "def _load():\n    from apex import amp\n    return amp\n\n\nclass Plugin:\n"
    "    def __init__(self):\n        if not _APEX_AVAILABLE:\n            raise RuntimeError('no apex')\n\n"
    "    def setup(self):\n        return _load()\n\n    def other(self):\n        return 1\n",
    "apex_class_leaks.py": "def _load():\n    from apex import amp\n    return amp\n\n\nclass Plugin:\n"
    "    def __init__(self):\n        if not _APEX_AVAILABLE:\n            raise RuntimeError('no apex')\n\n"
    "    def setup(self):\n        return _load()\n\n\nLOADER = _load\n",
    "empty.py": "",
    "bom.py": "\ufefffrom apex import amp\nimport apex\n",
    "cookie_utf8.py": "# -*- coding: utf-8 -*-\nfrom apex import amp  # caf\u00e9\n",
    # not Python: nothing, as the reference says
    "broken.py": "from apex import amp\ndef (:\n",
    "py2.py": "import torch\nprint 'hello'\nwith torch.autocast('cuda'):\n    pass\n",
    "return_top.py": "from apex import amp\nreturn 1\n",  # ast.parse accepts it; compiling refuses
    "nul.py": "from apex import amp\nx = '\x00'\n",
    "unterminated.py": "from apex import amp\ns = '''never closed\n",
    # strings left open on purpose, by the thousand: the lexer stays linear, the file reports nothing
    "open_strings.py": "x = torch.autocast\n" + '"""' + '\\"""' * 3000 + "\n" + ('"a\\"' * 500 + "\n") * 3,
}
ODD_BYTES = {
    "latin1_comment.py": b"# caf\xe9\nfrom apex import amp\n",  # the parser forgives a bad byte in a comment
    "latin1_string.py": b"from apex import amp\nx = 'caf\xe9'\n",  # but not in a string
    "latin1_cookie.py": b"# -*- coding: latin-1 -*-\nfrom apex import amp\nx = 'caf\xe9'\n"
    b"with torch.autocast('c'):\n pass\n",
    "bad_cookie.py": b"# coding: no-such-codec\nfrom apex import amp\n",
}


def test_odd_places_give_the_same_uses_as_parsing_every_file(tmp_path):
    for name, text in ODD.items():
        (tmp_path / name).write_text(text, newline="")
    for name, data in ODD_BYTES.items():
        (tmp_path / name).write_bytes(data)
    # the listing: links to files and directories, a dangling link, a FIFO, an environment, a hidden directory
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "inner.py").write_text("import apex\n")
    (tmp_path / "sub" / "a.py").write_text("import torch\nx = torch.autocast\n")
    os.symlink("decorated.py", tmp_path / "link.py")
    os.symlink(tmp_path / "sub", tmp_path / "sublink")
    os.symlink("nowhere.py", tmp_path / "dangling.py")
    os.mkfifo(tmp_path / "fifo.py")
    for env in ("venv", ".hidden"):
        (tmp_path / env).mkdir()
        (tmp_path / env / "pyvenv.cfg").write_text("")
        (tmp_path / env / "x.py").write_text("import apex\n")
    fast = assert_same(tmp_path)
    assert "fifo.py: a FIFO (named pipe), not a regular file" in fast["skipped_files"]
    # the tests for apex are live: each import is reached only with what its test names, save the leaking class's
    tested = {(use["file"], use["line"]): use["runs_only_with"] for use in fast["apex_uses"]}
    assert tested[("apex_tests.py", 8)] == ["apex"] and tested[("apex_tests.py", 16)] == ["apex.amp"]
    assert tested[("apex_tests.py", 19)] == ["apex"] and tested[("apex_tests.py", 12)] == []
    assert tested[("apex_tests.py", 24)] == ["apex", "apex.amp"]  # after the module's raise, and under HAS
    assert tested[("apex_class.py", 2)] == ["apex"] and tested[("apex_class_leaks.py", 2)] == []
    # the cases are live: each kind of use is found, and in the files meant to have them
    files = {use["file"] for key in ("apex_uses", "torch_amp_uses", "oneflow_uses") for use in fast[key]}
    assert {
        "decorated.py",
        "multiline.py",
        "fstring.py",
        "contexts.py",
        "depth.py",
        "flow.py",
        "crlf.py",
        "tabs.py",
        "latin1_comment.py",
        "latin1_cookie.py",
        "async_match.py",
        "bom.py",
        "link.py",
        "sub/a.py",
        "sub/deeper/inner.py",
    } <= files
    assert not files & {
        "only_strings.py",
        "broken.py",
        "py2.py",
        "nul.py",
        "latin1_string.py",
        "bad_cookie.py",
        "unterminated.py",
        "open_strings.py",
    }
    assert ("depth.py", 12) in {(u["file"], u["line"]) for u in fast["torch_amp_uses"] if u["what"] == "torch.autocast"}


def test_huge_files_the_same_as_parsing_every_file(tmp_path):
    """A file past the 4 MB read limit, a line past MAX_LINE, and a 9,000-line class with uses deep inside."""
    (tmp_path / "cut.py").write_text("from apex import amp\n" + ("# " + "x" * 998 + "\n") * 4500)
    (tmp_path / "long_line.py").write_text("import torch\nx = '" + "a" * 30_000 + "'\ny = torch.autocast\n")
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(1500))
    (tmp_path / "big_class.py").write_text(
        "import torch\n\n\nclass Big:\n" + methods + "    def use(self):\n        from apex import amp\n"
        "        return torch.cuda.amp.GradScaler()\n" + methods.replace("def m", "def n")
    )
    fast = assert_same(tmp_path)
    assert sorted(u["file"] for u in fast["apex_uses"]) == ["big_class.py", "cut.py"]
    assert fast["skipped_files"] == ["long_line.py: a line longer than 20000 characters, not parsed"]


SNIPPETS = [
    "from apex import amp\n",
    "import apex.normalization as n\n",
    "import torch\n",
    "scaler = torch.cuda.amp.GradScaler()\n",
    "with torch.autocast('cuda', dtype=torch.float16):\n    y = f(x)\n",
    "from torch.cuda.amp import autocast, GradScaler\n",
    "from torch import autocast\n",
    "import oneflow as flow\n",
    "m = oneflow_compile(m)\n",
    "with flow.autocast('cuda'):\n    pass\n",
    "m = torch.compile(m, backend='oneflow')\n",
    "z = maybe_autocast(x)  # autocast in a comment\n",
    "doc = '''\nfrom apex import amp\ntorch.autocast\n'''\n",
    "s = 'torch.autocast'\n",
    "x = call(\n    torch.autocast,\n    'apex',\n)\n",
    "@torch.autocast('cpu')\ndef deco():\n    pass\n",
    "y = (torch.cuda\n     .amp.GradScaler)\n",
    "from apex.amp import \\\n    scale_loss\n",
    "value = 1\n",
    "k = f'{torch.autocast}'\n",
    "amp = None\n",
    # code paths: steps of a training loop, calls, and names bound by imports that hold no key word
    "scaler.scale(loss).backward()\n",
    "torch.nn.utils.clip_grad_norm_(params, 1.0)\n",
    "scaler.step(opt)\n",
    "loss.backward()\n",
    "scaler.unscale_(opt)\n",
    "import torch as th\n",
    "from torch.nn.utils import clip_grad_value_ as cv\n",
    "cv(params, 1.0)\n",
    "h = th.autocast('cuda', enabled=False)\n",
    "from torch.cuda import amp\n",
    "ctx = amp.autocast() if use_amp else nullcontext()\n",
    "model, opt = amp.initialize(model, opt)\n",
    "f1()\n",
    "self.f2()\n",
    "c = partial(torch.autocast, device_type='cuda')\n",
    # tests for apex: a flag from a string, a call, a guarded import's name, statements that leave, a class
    "APEX_OK = find_spec('apex') is not None\n",
    "if is_apex_available():\n    from apex import amp\n",
    "if amp is not None:\n    import apex.parallel\n",
    "if not APEX_OK:\n    raise ImportError('apex')\n",
    "assert has_apex\n",
    "class G:\n    def __init__(self):\n        if not _APEX_AVAILABLE:\n            raise RuntimeError\n"
    "    def m(self):\n        return _load()\n",
    "def _load():\n    from apex import amp\n",
]


def _block(rng: random.Random, depth: int) -> str:
    """A random statement or block: snippets at top level and inside class, def, if, try and with bodies."""
    if depth > 2 or rng.random() < 0.5:
        return rng.choice(SNIPPETS)
    head = rng.choice(
        [
            "class C%d:\n" % rng.randrange(99),
            "def f%d():\n" % rng.randrange(99),
            "if flag:\n",
            "try:\n",
            "with ctx:\n",
            "async def a%d():\n" % rng.randrange(99),
        ]
    )
    body = "".join(_block(rng, depth + 1) for _ in range(rng.randint(1, 4)))
    text = head + "".join("    " + line + "\n" if line else "\n" for line in body.split("\n")[:-1])
    if head == "try:\n":
        text += "except ImportError:\n" + "".join("    " + line + "\n" for line in _block(rng, 3).split("\n")[:-1])
    return text


def test_a_random_tree_gives_the_same_uses_as_parsing_every_file(tmp_path):
    rng = random.Random(23)
    for n in range(150):
        text = "".join(_block(rng, 0) + "\n" * rng.randint(0, 2) for _ in range(rng.randint(1, 12)))
        (tmp_path / f"m{n:03}.py").write_text(text)
    fast = assert_same(tmp_path)
    assert len(fast["apex_uses"]) > 20 and len(fast["torch_amp_uses"]) > 20 and len(fast["oneflow_uses"]) > 20
    assert len({site["kind"] for site in fast["amp_sites"]}) >= 8


@pytest.mark.parametrize("part", ["_dynamo", "cuda", "cpu", "nn", "utils"])
def test_the_installed_torch_source_gives_the_same_uses_as_parsing_every_file(part):
    """Real files by the hundred with real AMP uses, each part of torch's source read as a project (not imported)."""
    top = Path(importlib.util.find_spec("torch").origin).parent / part
    fast = assert_same(top, max_files=100_000)
    assert fast["files_scanned"] >= 4 and fast["torch_amp_uses"]


@pytest.mark.skipif(not os.environ.get("MPDOCTOR_SCAN_TREE"), reason="set MPDOCTOR_SCAN_TREE to a project tree")
def test_a_tree_of_your_choice_gives_the_same_uses_as_parsing_every_file():
    """For the lead's own check: MPDOCTOR_SCAN_TREE=/tmp/tf-tree (an unpacked transformers wheel) pytest -k choice."""
    assert_same(Path(os.environ["MPDOCTOR_SCAN_TREE"]))


def test_a_file_with_no_key_word_in_code_is_not_parsed(tmp_path, monkeypatch):
    """Mentions in strings and comments, and longer names (maybe_autocast), cost no parse."""
    (tmp_path / "a.py").write_text(ODD["only_strings.py"] + "maybe_autocast(x)\nimport torch.amp_helpers\n")
    parsed = []
    monkeypatch.setattr(scan.ast, "parse", lambda *a, **k: parsed.append(a) or None)
    facts = scan.project_uses(str(tmp_path), 60.0)
    assert facts["files_scanned"] == 1 and parsed == []


def test_only_the_statements_around_a_use_are_parsed():
    source = (
        "import torch\n\n\nclass Big:\n    def a(self):\n        '''autocast'''\n        return 1\n\n"
        "    @property\n    def b(self):\n        return torch.autocast('cuda')\n\n    def c(self):\n"
        "        return 3\n\n\ndef other():\n    return 4\n"
    ).encode()
    masked, starts, ends = windows.lex(source)
    hits = windows.code_hits(windows.key_offsets(source, [b"autocast"]), starts, ends)
    window = windows.window_source(source, masked, hits)
    # the top-level import, and method b alone, at its own lines 9-11, under a stand-in line that keeps the
    # class's name; a's docstring mention is no hit
    assert (
        window.decode() == "import torch\n" + "\n" * 6 + "class Big:\n    @property\n    def b(self):\n"
        "        return torch.autocast('cuda')\n\n"
    )


def test_the_windows_run_under_the_oldest_python(tmp_path):
    """Python 3.8 (the oldest the remote code serves) gives the same answers as its own whole-file parse."""
    if not PYTHON38.exists():
        pytest.skip(f"no {PYTHON38} on this machine")
    for name, text in ODD.items():
        (tmp_path / name).write_text(text, newline="")
    rng = random.Random(38)  # and code paths at every depth: the code-path reader runs on 3.8 too
    for n in range(30):
        (tmp_path / f"r{n:02}.py").write_text("".join(_block(rng, 0) for _ in range(rng.randint(1, 8))))
    code = (
        LOAD_PACKAGES + "import time, json\n"
        "scan = importlib.import_module('_mpdoctor_remote.scan')\n"
        "listing = importlib.import_module('_mpdoctor_remote.listing')\n"
        + "".join(
            inspect.getsource(f).replace("-> dict", "").replace(": str", "").replace(": int", "")
            for f in (reference_files, reference_uses)
        )
        + "fast = scan.project_uses(sys.argv[3], 600.0)\n"
        "print(json.dumps([fast, reference_uses(sys.argv[3])]))\n"
    )
    result = subprocess.run(
        [str(PYTHON38), "-c", code, *package_inits(), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    fast, slow = json.loads(result.stdout)
    assert fast["apex_uses"] and fast["torch_amp_uses"] and fast["oneflow_uses"] and fast["amp_sites"]
    assert {key: fast[key] for key in slow} == slow
