"""NVIDIA apex facts, collected *inside the interpreter under diagnosis*.

Loaded beside ``target.py`` by the environment probe, so the same rules hold:
stdlib only, Python 3.8+, judge nothing. Nothing here imports apex or its
compiled extensions; an extension that was built against another torch can
abort the interpreter on import. ``loads.py`` imports them, in forked
children, after torch.
"""

import ast
import importlib.util
import os
import re
import struct
import warnings

from ._portable import files, limits, linebreaks, redact

redact_clip = redact.redact_clip  # redacts before it cuts: a cut token would no longer look like one

# Compiled modules NVIDIA apex's setup.py can build. They install as *top-level*
# modules (site-packages/fused_layer_norm_cuda.cpython-310-x86_64-linux-gnu.so),
# not under apex/. The first three are the core ones every full build has.
EXTENSIONS = (
    "apex_C",
    "amp_C",
    "fused_layer_norm_cuda",
    "syncbn",
    "mlp_cuda",
    "fused_dense_cuda",
    "scaled_upper_triang_masked_softmax_cuda",
    "generic_scaled_masked_softmax_cuda",
    "scaled_masked_softmax_cuda",
    "scaled_softmax_cuda",
    "fused_rotary_positional_embedding",
    "fused_weight_gradient_mlp_cuda",
    "xentropy_cuda",
    "focal_loss_cuda",
    "group_norm_cuda",
    "fused_index_mul_2d",
    "fused_adam_cuda",
    "fused_lamb_cuda",
    "fast_layer_norm",
    "transducer_joint_cuda",
    "transducer_loss_cuda",
    "bnp",
    "permutation_search_cuda",
    "distributed_adam_cuda",
    "distributed_lamb_cuda",
    "fused_conv_bias_relu",
    "fast_bottleneck",
    "peer_memory_cuda",
    "nccl_p2p_cuda",
    "cudnn_gbn_lib",
    "_apex_nccl_allocator",
)
DISTRIBUTIONS = ("apex", "nvidia-apex")
MAX_SOURCE = 1 << 20  # bytes of apex/__init__.py worth parsing
MAX_LIST = 60


def _canonical(name):
    return "".join("-" if ch in "_." else ch for ch in (name or "").lower())


# ---------------------------------------------------------------- where apex is


def find_locations(entries, cwd):
    """Every place on the module search path that provides a top-level ``apex``, in search order.

    The working directory is searched last and marked: ``python train.py`` puts the
    script's directory first on sys.path, so a stray ``apex/`` there wins.
    """
    found = []
    seen = set()
    searched = [(entry, "sys.path") for entry in entries]
    if cwd and cwd not in entries:
        searched.append((cwd, "cwd"))
    for entry, source in searched:
        real = os.path.realpath(entry)
        if real in seen or not os.path.isdir(entry):
            continue
        seen.add(real)
        package = os.path.join(entry, "apex")
        if os.path.isdir(package):
            kind = "package" if os.path.isfile(os.path.join(package, "__init__.py")) else "namespace"
            found.append({"path": package, "kind": kind, "entry": entry, "source": source})
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for name in names:
            if name == "apex.py" or (name.startswith("apex.") and name.endswith((".so", ".pyd"))):
                found.append({"path": os.path.join(entry, name), "kind": "module", "entry": entry, "source": source})
    return found


def import_resolution():
    """What ``import apex`` would load, found without running apex's code."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = importlib.util.find_spec("apex")
    except Exception as exc:  # a broken finder (.pth hook) counts as an answer too
        return {"kind": "error", "error": redact_clip("%s: %s" % (type(exc).__name__, exc), limits.ERROR_TEXT)}
    if spec is None:
        return {"kind": "none"}
    locations = list(spec.submodule_search_locations or [])
    if spec.origin and spec.origin not in ("namespace", None) and os.path.exists(spec.origin):
        kind = "package" if locations else "module"
        return {"kind": kind, "origin": spec.origin, "locations": locations}
    return {"kind": "namespace", "origin": "", "locations": locations}


def package_contents(directory):
    """Subpackages and modules of an apex package directory, and a sample of what else is there."""
    subpackages, entries = [], []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return {"subpackages": [], "entries": []}
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
            subpackages.append(name)
        elif name.endswith(".py") and name != "__init__.py":
            subpackages.append(name[:-3])
        if len(entries) < MAX_LIST:
            entries.append(name + ("/" if os.path.isdir(path) else ""))
    return {"subpackages": subpackages, "entries": entries}


def module_imports(path):
    """Modules a source file imports (``.x`` for relative ones), in order, read with ast, never run."""
    try:
        source = files.read_bytes(path, MAX_SOURCE, cut=True)  # a FIFO named *.py is refused, not waited on
        tree = ast.parse(source, filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        return None, redact_clip("%s: %s" % (type(exc).__name__, exc), limits.ERROR_TEXT)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return list(dict.fromkeys(names)), ""  # in the order the file imports them


# ---------------------------------------------------------------- what installed it


def _top_levels(dist):
    """Top-level names a distribution installed, from RECORD or installed-files.txt."""
    names = set()
    record = _read(dist, "RECORD")
    if record:
        paths = [line.rsplit(",", 2)[0].strip('"') for line in linebreaks.split_lines(record) if line.strip()]
    else:
        listed = _read(dist, "installed-files.txt") or ""
        base = str(getattr(dist, "_path", ""))
        location = os.path.dirname(base)
        paths = [
            os.path.relpath(os.path.normpath(os.path.join(base, line)), location)
            for line in linebreaks.split_lines(listed)
            if line.strip()
        ]
    for path in paths:
        first = path.replace("\\", "/").split("/")[0]
        if first and not first.startswith("..") and not first.endswith((".dist-info", ".egg-info")):
            names.add(first)
    return sorted(names)


def _read(dist, name):
    try:
        return dist.read_text(name)
    except Exception:
        return None


def apex_distributions():
    """NVIDIA apex's and its namesakes' distributions: where they are and what they installed."""
    import importlib.metadata as metadata

    out = []
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"] or ""
        except Exception:
            continue
        if _canonical(name) not in DISTRIBUTIONS:
            continue
        try:
            location = str(dist.locate_file(""))
        except Exception:
            location = ""
        out.append(
            {
                "name": name,
                "version": dist.metadata["Version"] or "",
                "location": location,
                "top_level": _top_levels(dist)[:MAX_LIST],
            }
        )
    return out


def conda_packages(prefix):
    """conda's record of apex packages (conda-forge calls NVIDIA's ``nvidia-apex``)."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        names = os.listdir(meta)
    except OSError:
        return []
    return sorted(name[:-5] for name in names if name.endswith(".json") and "apex" in name.lower())


def names_package(line, word, pth_name=""):
    """Whether a .pth line is about the package ``word``, not a line that only holds its letters.

    A .pth file named after the package (``__editable__.apex-0.1.pth``) is about it whole; an ``import`` line
    when it names the package as a word (``import __editable___apex_0_1_finder``); a path line when the package
    is one of its components (a checkout ``/src/apex``, an egg ``apex-0.1-py3.11.egg``) or the directory holds
    the package. ``/tmp/apex003-x/site``, a folder whose name merely starts with the letters, is none of these.
    """
    word = word.lower()
    if word in pth_name.lower():
        return True
    text = line.strip()
    if text.startswith(("import ", "import\t")):
        return re.search(r"(?<![a-z0-9])%s(?![a-z0-9])" % re.escape(word), text.lower()) is not None
    parts = [part.lower() for part in re.split(r"[/\\]", text) if part]
    if any(part == word or part.startswith((word + "-", word + ".")) for part in parts):
        return True
    try:
        return os.path.isdir(os.path.join(text, word))
    except (OSError, ValueError):
        return False


def pth_lines(entries, words=("apex",)):
    """Lines of .pth files on the path that are about one of ``words`` (``names_package``): editable installs,
    added paths, hooks."""
    lines = []
    for entry in entries:
        try:
            names = sorted(name for name in os.listdir(entry) if name.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            path = os.path.join(entry, name)
            try:
                text = files.read_bytes(path, 65536, cut=True).decode("utf-8", "replace")
            except (OSError, files.Refused):  # unreadable, or not a regular file (a FIFO would block the open)
                continue
            lines += [
                {"file": path, "line": redact_clip(line.strip(), limits.CODE_LINE)}
                for line in text.splitlines()
                if any(word in line.lower() and names_package(line, word, name) for word in words)
            ]
    return lines[:MAX_LIST]


# ---------------------------------------------------------------- compiled extensions


def elf_needed(path):
    """The DT_NEEDED entries (libraries it links) of an ELF shared object; None if not ELF."""
    if files.not_regular(path):  # a FIFO would block the open, a device never end
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            if head[:4] != b"\x7fELF" or len(head) < 52:
                return None
            wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
            if wide:
                (shoff,) = struct.unpack_from(order + "Q", head, 0x28)
                shentsize, shnum = struct.unpack_from(order + "HH", head, 0x3A)
                layout = order + "IIQQQQIIQQ"
            else:
                (shoff,) = struct.unpack_from(order + "I", head, 0x20)
                shentsize, shnum = struct.unpack_from(order + "HH", head, 0x2E)
                layout = order + "IIIIIIIIII"
            handle.seek(shoff)
            table = handle.read(shentsize * shnum)
            sections = [struct.unpack_from(layout, table, i * shentsize) for i in range(len(table) // shentsize)]
            for section in sections:
                if section[1] != 6:  # SHT_DYNAMIC
                    continue
                strtab = sections[section[6]]
                return _needed(handle, section, strtab, wide, order)
    except (OSError, struct.error, IndexError):
        return None
    return []


def _needed(handle, dynamic, strtab, wide, order):
    handle.seek(dynamic[4])
    entries = handle.read(min(dynamic[5], 1 << 20))
    handle.seek(strtab[4])
    strings = handle.read(min(strtab[5], 16 << 20))
    size, layout = (16, order + "qQ") if wide else (8, order + "iI")
    needed = []
    for offset in range(0, len(entries) - size + 1, size):
        tag, value = struct.unpack_from(layout, entries, offset)
        if tag == 0:
            break
        if tag == 1:  # DT_NEEDED
            end = strings.find(b"\0", value)
            needed.append(strings[value : end if end >= 0 else None].decode("utf-8", "replace"))
    return needed


def extension_names(distributions):
    """The known extension names plus any top-level compiled module an apex distribution installed."""
    names = list(EXTENSIONS)
    for dist in distributions:
        for entry in dist.get("top_level", []):
            if entry.endswith((".so", ".pyd")):
                module = entry.split(".")[0]
                if module not in names and module != "apex":
                    names.append(module)
    return names


def find_extensions(names):
    """Where each compiled apex module would load from (found, not imported), with what it links."""
    found = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        if spec is None or not spec.origin:
            continue
        needed = elf_needed(spec.origin) if spec.origin.endswith(".so") else None
        found.append({"name": name, "origin": spec.origin, "needed": needed})
    return found


def apex_facts(entries, cwd, prefix):
    """Everything about apex that can be known without importing it."""
    facts = {
        "locations": find_locations(entries, cwd),
        "resolution": import_resolution(),
        "distributions": apex_distributions(),
        "conda_packages": conda_packages(prefix),
        "pth_lines": pth_lines(entries),
    }
    package = _package_dir(facts["resolution"], facts["locations"])
    if package:
        facts.update(package_contents(package))
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init):
            facts["init_imports"], facts["init_error"] = module_imports(init)
    facts["extensions"] = find_extensions(extension_names(facts["distributions"]))
    return facts


def _package_dir(resolution, locations):
    """The apex directory worth describing: what `import apex` loads, else what a script here would."""
    if resolution.get("kind") == "package":
        return os.path.dirname(resolution["origin"])
    if resolution.get("kind") == "namespace" and resolution.get("locations"):
        return resolution["locations"][0]  # a bare apex/ directory: often a git checkout of NVIDIA/apex
    directories = [location["path"] for location in locations if location["kind"] != "module"]
    return directories[0] if directories else ""


def present(facts):
    """Is there any trace of apex worth a closer look?"""
    return any(facts.get(key) for key in ("locations", "distributions", "conda_packages", "extensions")) or facts.get(
        "resolution", {}
    ).get("kind") not in (None, "none")
