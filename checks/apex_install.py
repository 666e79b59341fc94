"""apex install: which apex `import apex` gets, and whether its compiled parts work with this torch."""

from __future__ import annotations

from typing import Iterator

from mpdoctor.findings import Finding, FixStep, error, warning
from mpdoctor.checks.registry import check, defer
from mpdoctor.checks import _apex, fixes
from mpdoctor.checks._apex import FAMILY
from mpdoctor.checks._common import requirers
from mpdoctor.snapshot import Snapshot


@check(
    "APEX001",
    "pypi-apex-impostor",
    family=FAMILY,
    needs=("project",),
    fires_on=("apex-pypi-impostor",),
    quiet_on=("apex-incident1", "apex-checkout-in-cwd", "cpu-laptop"),
)
def pypi_impostor(snap: Snapshot) -> Iterator[Finding]:
    """The `apex` installed is an unrelated PyPI project, not NVIDIA apex.

    ## Why it matters
    `pip install apex` installs "apex" 0.9.10dev from PyPI: a Pyramid web
    toolkit (Velruse, flash messages, CSRF) that merely shares the name. NVIDIA
    apex is not on PyPI. Code that asks whether apex is installed
    (`importlib.util.find_spec("apex")`, transformers' `is_apex_available()`)
    says yes, then `from apex import amp` fails with `No module named
    'pyramid_mailer'` or `cannot import name 'amp'`.

    ## Fix
    `pip uninstall apex`. Most code no longer needs NVIDIA apex: torch.amp
    replaces apex.amp. If yours does, build NVIDIA apex from source
    (https://github.com/NVIDIA/apex) or install conda-forge's `nvidia-apex`.
    """
    if _apex.flavour(snap) != "pypi":
        return
    apex = _apex.facts(snap)
    evidence = [_apex.describe(snap)]
    dist = snap.distribution("apex")
    if dist is not None:
        evidence.append(f'its summary: "{dist.summary}"')
        pyramid = [req for req in dist.requires if any(name in req.lower() for name in _apex.PYRAMID_NAMES)]
        if pyramid:
            evidence.append("it requires " + ", ".join(pyramid))
    imports = [name for name in apex.init_imports or [] if name.split(".")[0].startswith(_apex.PYRAMID_NAMES)]
    if imports:
        evidence.append("apex/__init__.py imports " + ", ".join(imports[:6]) + (", ..." if len(imports) > 6 else ""))
    users = apex.users + snap.environment.project.apex_uses
    evidence += [f"expects NVIDIA apex: {_apex.where(use)}" for use in users[:5]]
    yield warning(
        "`apex` here is an unrelated PyPI project (a Pyramid web toolkit), not NVIDIA apex",
        evidence,
        _apex.uninstall_steps(snap, "Uninstall the PyPI namesake")
        + [
            _apex.torch_amp_step(),
            *(
                [
                    fixes.alternative(
                        "If you do need NVIDIA apex, install conda-forge's build (this env's torch is conda's too)",
                        fixes.conda(snap, "install", "-y", "-c", "conda-forge", "nvidia-apex"),
                    )
                ]
                if fixes.conda_owns_torch(snap)
                else []
            ),
            *_apex.build_steps(snap),
        ],
    )


@check(
    "APEX002",
    "apex-without-extensions",
    family=FAMILY,
    fires_on=("apex-python-only",),
    quiet_on=("apex-stale-torch", "apex-pypi-impostor", "apex-checkout-in-cwd"),
)
def without_extensions(snap: Snapshot) -> Iterator[Finding]:
    """NVIDIA apex is installed without its compiled extensions (a Python-only build).

    ## Why it matters
    `from apex.normalization import FusedRMSNorm` still works, so libraries
    switch to apex's fused layers, but the CUDA kernels are not there: the
    first forward pass on a GPU fails with `ModuleNotFoundError: No module named
    'fused_layer_norm_cuda'`, and FusedAdam/FusedLAMB need `amp_C`.

    ## Fix
    Rebuild apex with `APEX_CPP_EXT=1 APEX_CUDA_EXT=1` and the CUDA toolkit
    that matches torch's CUDA, or uninstall it and use torch's native layers.
    """
    if _apex.flavour(snap) != "nvidia":
        return
    missing = _apex.missing_core(snap)
    if not missing:
        return
    present = [ext.name for ext in _apex.extensions(snap)]
    python_only = not present
    evidence = [
        _apex.describe(snap),
        f"not importable: {', '.join(missing)}" + (f"; present: {', '.join(present)}" if present else ""),
    ]
    fused = [use for use in _apex.facts(snap).users if _apex.swaps_norm(use)]
    evidence += [f"switches to apex when it imports: {_apex.where(use)}" for use in fused[:5]]
    gpu_torch = bool(snap.torch.cuda)
    what = "a Python-only build" if python_only else "built without " + ", ".join(missing)
    if fused and gpu_torch and "fused_layer_norm_cuda" in missing:
        title = (
            f"NVIDIA apex is {what}, and installed libraries will use its fused norms: their first GPU "
            "forward fails with `No module named 'fused_layer_norm_cuda'`"
        )
        make = error
    else:
        title = f"NVIDIA apex is {what}: its fused layers and optimizers fail at first use on a GPU"
        make = warning
    needed_by = [dist.name for dist, _ in requirers(snap, "apex")]
    steps = [] if needed_by else _apex.uninstall_steps(snap, "If you do not need apex, uninstall it")
    steps += _apex.rebuild_steps(snap, "Or rebuild it with its CUDA extensions; uninstall the Python-only build first")
    yield make(title, evidence, steps)


@check(
    "APEX003",
    "apex-extension-fails-to-load",
    family=FAMILY,
    defers_to=("APEX004",),
    fires_on=("apex-stale-torch",),
    quiet_on=("apex-python-only", "apex-incident1"),
)
def extension_fails(snap: Snapshot) -> Iterator[Finding]:
    """A compiled apex extension does not load against the installed torch.

    ## Why it matters
    apex's extensions are C++/CUDA code compiled against one exact torch. After
    torch is upgraded (or reinstalled), importing them fails with
    `undefined symbol: _ZN...`, or a library they link is missing. Libraries
    that use apex then fail at import or at first use.

    ## Fix
    Rebuild apex against the installed torch (same CUDA version as
    `torch.version.cuda`), or `pip uninstall apex` if torch.amp is all you need.
    Extensions built for another CUDA than torch's fail to load too: APEX004
    names that cause, and this check then leaves them to it.
    """
    broken = [ext for ext in _apex.extensions(snap) if ext.load_status in ("error", "crashed", "timeout")]
    other_cuda = [ext for ext in broken if _apex.cuda_mismatch(snap, ext)]
    rest = [ext for ext in broken if ext not in other_cuda]
    if rest:
        yield _load_failure(snap, rest)
    if other_cuda:
        yield defer(_load_failure(snap, other_cuda), "APEX004")


def _load_failure(snap: Snapshot, broken) -> Finding:
    evidence = [_apex.describe(snap), f"torch {snap.torch.version or '?'} (CUDA {snap.torch.cuda or 'none'})"]
    symbols, libraries = [], []
    for ext in broken:
        where = "" if ext.origin in ext.load_detail else f" ({ext.origin})"
        evidence.append(f"{ext.name}{where}: {ext.load_status}: {ext.load_detail}")
        if _apex.cuda_mismatch(snap, ext):
            evidence.append(
                f"{ext.name} was built for CUDA {_apex.cuda_major(ext)}; torch uses "
                f"{'CUDA ' + snap.torch.cuda if snap.torch.cuda else 'no CUDA'}"
            )
        if match := _apex.UNDEFINED_SYMBOL.search(ext.load_detail):
            symbols.append(match.group(1))
        if match := _apex.MISSING_LIBRARY.search(ext.load_detail):
            libraries.append(match.group(1))
    names = ", ".join(ext.name for ext in broken)
    plural = len(broken) > 1
    if symbols:
        title = (
            f"apex's {names} {'were' if plural else 'was'} built against another torch: undefined symbol {symbols[0]}"
        )
    elif libraries:
        title = f"apex's {names} {'link' if plural else 'links'} {libraries[0]}, which is not found"
    else:
        title = f"apex's {names} {'fail' if plural else 'fails'} to load with this torch"
    steps = _apex.rebuild_steps(snap, "Rebuild apex against the installed torch; uninstall the stale build first")
    steps += _apex.uninstall_steps(snap, "Or, if torch.amp is all you need, remove apex")
    return error(title, evidence, steps)


@check(
    "APEX004",
    "apex-cuda-mismatch",
    family=FAMILY,
    fires_on=("apex-cuda11",),
    quiet_on=("apex-stale-torch", "apex-incident1", "oneflow-cuda-mismatch"),
)
def cuda_mismatch(snap: Snapshot) -> Iterator[Finding]:
    """apex's extensions were built for another CUDA than torch's.

    ## Why it matters
    apex's setup.py refuses to build with an nvcc whose CUDA differs from
    `torch.version.cuda`, because the two runtimes in one process disagree.
    A build that links `libcudart.so.11` beside a CUDA 12 torch (or any CUDA
    build beside a CPU-only torch) was made for another environment.

    ## Fix
    Rebuild apex with the CUDA toolkit matching torch's CUDA, or uninstall it.
    """
    wrong = [ext for ext in _apex.extensions(snap) if _apex.cuda_mismatch(snap, ext)]
    if not wrong:
        return
    built = sorted({_apex.cuda_major(ext) for ext in wrong})
    torch_text = f"CUDA {snap.torch.cuda}" if snap.torch.cuda else "no CUDA (a CPU-only or ROCm build)"
    evidence = [_apex.describe(snap), f"torch {snap.torch.version} is built with {torch_text}"]
    for ext in wrong[:6]:
        loads = "" if ext.load_status in ("ok", "not-tried") else f"; loading it: {ext.load_detail}"
        evidence.append(
            f"{ext.name} links {', '.join(lib for lib in ext.needed or [] if lib.startswith('libcudart'))}" + loads
        )
    title = f"apex was built for CUDA {'/'.join(map(str, built))}, but torch uses {torch_text}"
    steps = _apex.rebuild_steps(snap, "Rebuild apex with the toolkit that matches torch; uninstall this build first")
    yield error(title, evidence, steps)


@check(
    "APEX009",
    "stray-apex-on-path",
    family=FAMILY,
    fires_on=("apex-checkout-in-cwd",),
    quiet_on=("apex-incident1", "apex-pypi-impostor", "torch-leftover-directory"),
)
def stray_apex(snap: Snapshot) -> Iterator[Finding]:
    """An apex directory that no installer owns is on the import path, or shadows the installed apex.

    ## Why it matters
    A `git clone` of NVIDIA/apex in the working directory, or a leftover apex/
    folder, is imported instead of the installed apex: as a bare directory it
    has none of apex's modules (`cannot import name 'amp' from 'apex' (unknown
    location)`); as a package it hides the real one from scripts run there.
    Two installed copies (an old egg and a wheel) shadow each other the same way.

    ## Fix
    Move the stray directory away (or run from elsewhere), and uninstall
    until pip says apex is not installed before installing one apex.
    """
    apex = _apex.facts(snap)
    seen_by_scripts = _apex.script_view(snap)
    if seen_by_scripts is None:
        return
    evidence = [
        f"{loc.kind} {loc.path}"
        + (" (in the working directory: scripts run there see it first)" if loc.source == "cwd" else "")
        for loc in apex.locations
    ]
    evidence += [f"{line.file}: {line.line}" for line in apex.pth_lines]
    here = " in scripts run from the working directory" if seen_by_scripts.source == "cwd" else ""
    if seen_by_scripts.kind == "namespace":
        what = (
            "a source checkout of NVIDIA apex"
            if _apex.bare_directory_kind(apex) == "checkout"
            else "a bare apex/ directory"
        )
        yield warning(
            f"`import apex`{here} gets {what} ({seen_by_scripts.path}), not an installed apex: "
            "`from apex import ...` finds nothing in it",
            evidence,
            _apex.stray_steps(snap) or [FixStep(f"Take {seen_by_scripts.entry} off PYTHONPATH")],
        )
        return
    stray_paths = {loc.path for loc in _apex.strays(snap)}
    if seen_by_scripts.source == "cwd" and seen_by_scripts.path in stray_paths and _apex.importable(snap):
        yield warning(
            f"scripts run from {seen_by_scripts.entry} import {seen_by_scripts.path}, not the installed "
            f"apex ({apex.origin})",
            evidence,
            _apex.stray_steps(snap),
        )
        return
    real = [loc for loc in apex.locations if loc.kind != "namespace" and loc.source == "sys.path"]
    if len(real) > 1:
        yield warning(
            f"{len(real)} copies of apex are on the path; {real[0].path} shadows the others",
            evidence,
            _apex.uninstall_steps(snap, "Uninstall every copy, then install the one you want"),
        )
