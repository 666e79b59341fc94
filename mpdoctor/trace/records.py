"""The records a dtype trace keeps, and how they read: calls, mismatches, the failure and its note.

Plain data: dtypes, shapes and names, never a tensor. ``trace.py`` fills them in.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, NamedTuple, Optional, Sequence

from mpdoctor.portable.linebreaks import split_lines

MAX_PRODUCED = 8  # submodule outputs named in a failure note: the last ones before the error matter most
MAX_NAMES = 4  # parameter names shown per dtype in a failure note
MAX_CELL = 48  # characters in one table cell
ROOT = "(root)"  # how the traced model itself is named: named_modules() calls it ""
# Python 3.11 gave exceptions notes (PEP 678); before that the note goes into the message.
_HAS_NOTES = hasattr(BaseException, "add_note")


class TensorInfo(NamedTuple):
    """One floating tensor as a trace sees it: where it was, its dtype and its shape.

    A named tuple, not a dataclass: a trace makes several per module call, and a
    frozen dataclass takes four times as long to build.
    """

    name: str  # "args[0]", "mask", "args[1][0]", "weight", "output[0]"
    dtype: str  # "float16", without the "torch." prefix
    shape: Optional[tuple[int, ...]]  # None for a tensor without a plain shape (a nested tensor)

    def __str__(self) -> str:
        return f"{self.dtype} {shape_text(self.shape)}"

    def to_data(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "shape": None if self.shape is None else list(self.shape)}


@dataclass
class ModuleCall:
    """One call of one module, recorded by the trace."""

    index: int  # position in call order, from 0
    name: str  # qualified name from named_modules(); "" for the traced model itself
    cls: str  # class name, "Linear"
    depth: int  # how many traced module calls were running around this one
    parent: Optional[int]  # index of the call this one ran inside, None at the top
    inputs: tuple[TensorInfo, ...]
    params: tuple[TensorInfo, ...]  # the module's own floating parameters (recurse=False)
    buffers: tuple[TensorInfo, ...]  # the module's own floating buffers (recurse=False)
    autocast: Optional[bool]  # autocast on for the inputs' device; None when torch could not say
    autocast_dtype: Optional[str]  # the dtype autocast casts to, when it is on
    device: Optional[str]  # device type of the inputs ("cpu", "cuda"), else of the parameters
    outputs: tuple[TensorInfo, ...] = ()
    finished: bool = False  # the forward returned
    raised: bool = False  # the forward raised (this call or one inside it)
    # (child, dtype) for each floating output of a direct child that no later child took as its input, in
    # call order: what this module combined itself. Kept only when those outputs differ in dtype.
    combined: tuple[tuple[str, str], ...] = ()
    # (input, module) for inputs that an earlier sibling returned as that very tensor: who made it. Kept only
    # when the inputs differ in dtype.
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return self.name or ROOT

    @property
    def input_dtypes(self) -> tuple[str, ...]:
        return distinct_dtypes(self.inputs)

    @property
    def param_dtypes(self) -> tuple[str, ...]:
        return distinct_dtypes(self.params)

    @property
    def output_dtypes(self) -> tuple[str, ...]:
        return distinct_dtypes(self.outputs)

    @property
    def mismatched(self) -> bool:
        """Dtypes meet here, with autocast off: floating inputs that differ from each other or from the
        floating parameters, or children's outputs it combined that differ (a container with no parameters).

        Under autocast the op casts its operands itself, so the difference is intended.
        """
        if self.autocast:
            return False
        if len(self.input_dtypes) > 1 or self.combined:
            return True
        return bool(self.inputs and self.params) and len(set(self.input_dtypes) | set(self.param_dtypes)) > 1

    def mismatch(self) -> "Mismatch":
        made = dict(self.sources)
        inputs = (
            tuple((f"{t.name} ({made[t.name]})" if t.name in made else t.name, t.dtype) for t in self.inputs)
            if len(self.input_dtypes) > 1
            else ()
        )
        return Mismatch(self.index, self.name, self.cls, self.input_dtypes, self.param_dtypes, inputs, self.combined)

    def to_data(self) -> dict:
        return {
            "index": self.index,
            "module": self.name,
            "class": self.cls,
            "depth": self.depth,
            "parent": self.parent,
            "inputs": [t.to_data() for t in self.inputs],
            "params": [t.to_data() for t in self.params],
            "buffers": [t.to_data() for t in self.buffers],
            "outputs": [t.to_data() for t in self.outputs],
            "autocast": self.autocast,
            "autocast_dtype": self.autocast_dtype,
            "device": self.device,
            "finished": self.finished,
            "raised": self.raised,
            "mismatched": self.mismatched,
            "combined": [{"module": m, "dtype": d} for m, d in self.combined],
            "sources": [{"input": i, "module": m} for i, m in self.sources],
        }


@dataclass(frozen=True)
class Mismatch:
    """A call where floating dtypes meet: its inputs differ from each other or from its parameters, or the
    outputs of its children that it combined differ (``decoder.attn``: ``q_proj`` float32, ``k_proj`` float16)."""

    index: int
    module: str
    cls: str
    input_dtypes: tuple[str, ...]
    param_dtypes: tuple[str, ...]
    inputs: tuple[tuple[str, str], ...] = ()  # (input, dtype) when the inputs differ from each other
    combined: tuple[tuple[str, str], ...] = ()  # (child, dtype): children's outputs it combined, when they differ

    @property
    def producers(self) -> dict[str, tuple[str, ...]]:
        """Each floating dtype that meets here -> what brought it: inputs by name, then children."""
        found: dict[str, list[str]] = {}
        for name, dtype in self.inputs + self.combined:
            if name not in found.setdefault(dtype, []):
                found[dtype].append(name)
        return {dtype: tuple(names) for dtype, names in found.items()}

    def __str__(self) -> str:
        where = f"{self.module or ROOT} ({self.cls})"
        producers = self.producers
        if not producers:
            return f"{where}: inputs {', '.join(self.input_dtypes)}, parameters {', '.join(self.param_dtypes)}"
        met = "; ".join(f"{dtype} from {', '.join(names)}" for dtype, names in producers.items())
        return f"{where}: {met}" + (f"; parameters {', '.join(self.param_dtypes)}" if self.param_dtypes else "")

    def to_data(self) -> dict:
        return {
            "index": self.index,
            "module": self.module,
            "class": self.cls,
            "input_dtypes": list(self.input_dtypes),
            "param_dtypes": list(self.param_dtypes),
            "producers": {dtype: list(names) for dtype, names in self.producers.items()},
        }


@dataclass(frozen=True)
class Produced:
    """What a submodule of the failing module returned before the error."""

    module: str  # name relative to the failing module: "q_proj"
    cls: str
    outputs: tuple[TensorInfo, ...]

    def __str__(self) -> str:
        shown = ", ".join(str(t) for t in self.outputs) or "no floating output"
        return f"{self.module} ({self.cls}) {shown}"

    def to_data(self) -> dict:
        return {"module": self.module, "class": self.cls, "outputs": [t.to_data() for t in self.outputs]}


@dataclass(frozen=True)
class Failure:
    """The innermost module running when the forward raised, and the dtypes around it."""

    index: Optional[int]  # its ModuleCall's index; None when records were no longer kept (MAX_CALLS)
    module: str
    cls: str
    inputs: tuple[TensorInfo, ...]
    params: tuple[TensorInfo, ...]  # floating parameters of the module and its submodules, relative names
    buffers: tuple[TensorInfo, ...]  # the same for buffers
    produced: tuple[Produced, ...]  # outputs of its submodules that finished before the error, in order
    produced_earlier: int  # how many finished before those and are left out (MAX_PRODUCED)
    autocast: Optional[bool]
    autocast_dtype: Optional[str]
    error: str  # "RuntimeError: mat1 and mat2 must have the same dtype, ..." (first line)
    note: str = field(default="", compare=False)  # the text added to the exception
    # Where the dtypes first met, when that is another call: a module that only promoted the dtype (an fp32
    # embedding summed with fp16 ones) raises nothing; the error comes later, in a module it fed.
    origin: Optional[Mismatch] = field(default=None, compare=False)

    @property
    def dtypes(self) -> tuple[str, ...]:
        """Every floating dtype that meets in this module: inputs, parameters, submodule outputs."""
        seen = list(self.inputs) + list(self.params) + [t for p in self.produced for t in p.outputs]
        return distinct_dtypes(seen)

    def to_data(self) -> dict:
        return {
            "index": self.index,
            "module": self.module,
            "class": self.cls,
            "inputs": [t.to_data() for t in self.inputs],
            "params": [t.to_data() for t in self.params],
            "buffers": [t.to_data() for t in self.buffers],
            "produced": [p.to_data() for p in self.produced],
            "produced_earlier": self.produced_earlier,
            "autocast": self.autocast,
            "autocast_dtype": self.autocast_dtype,
            "dtypes": list(self.dtypes),
            "error": self.error,
            "note": self.note,
            "origin": None if self.origin is None else self.origin.to_data(),
        }


def with_note(failure: Failure) -> Failure:
    """The failure with the note the exception will carry: what met where, in plain words."""
    where = f"{failure.module or ROOT} ({failure.cls})"
    inputs = listed(failure.inputs) or "no floating inputs"
    parts = [f"inputs {inputs}", f"parameters {grouped(failure.params)}" if failure.params else "no parameters"]
    if failure.buffers:
        parts.append(f"buffers {grouped(failure.buffers)}")
    if failure.autocast:
        parts.append(f"autocast on ({failure.autocast_dtype or 'dtype unknown'})")
    elif failure.autocast is False:
        parts.append("autocast off")
    lines = [f"mpdoctor dtype_trace: raised inside {where}: {'; '.join(parts)}."]
    if failure.origin is not None:
        # The origin leads: the module that raised is only where the mix was noticed.
        lines = [
            f"mpdoctor dtype_trace: the dtypes first met in {failure.origin}.",
            f"  The forward raised later, inside {where}: {'; '.join(parts)}.",
        ]
    if failure.produced:
        earlier = f" (after {failure.produced_earlier} earlier)" if failure.produced_earlier else ""
        lines.append(
            f"  before the error, its submodules produced{earlier}: {'; '.join(str(p) for p in failure.produced)}."
        )
    dtypes = failure.dtypes
    if len(dtypes) > 1:
        lines.append(f"  {' and '.join(dtypes)} meet here.")
    # module and tensor names are the user's (a ModuleDict key may hold ESC ]52; or U+202E): the note is printed
    # with the traceback, so each of its lines shows such a character as its escape, and a newline in a name
    # cannot add a line
    return replace(failure, note="\n".join(shown(line) for line in lines))


def shown(text: str) -> str:
    """``text`` with every character that is not printable (controls, DEL, C1, bidi and other format characters,
    line separators) written as its Python escape: ``\\x1b``, ``\\u202e``."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def grouped(tensors: Sequence[TensorInfo]) -> str:
    """ "float32 (q_proj.weight, q_proj.bias), float16 (k_proj.weight, ...)": each dtype with names."""
    groups: dict[str, list[str]] = {}
    for t in tensors:
        groups.setdefault(t.dtype, []).append(t.name)
    shown = []
    for dtype, names in groups.items():
        more = f", and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
        shown.append(f"{dtype} ({', '.join(names[:MAX_NAMES])}{more})")
    return ", ".join(shown)


def listed(tensors: Sequence[TensorInfo]) -> str:
    """ "float16 [2, 8, 64], float32 [2, 8] (mask)": a positional argument needs no name."""
    shown = []
    for t in tensors[: MAX_NAMES * 2]:
        plain = t.name.startswith("args[") and t.name.count("[") == 1
        shown.append(str(t) if plain else f"{t} ({t.name})")
    if len(tensors) > MAX_NAMES * 2:
        shown.append(f"and {len(tensors) - MAX_NAMES * 2} more")
    return ", ".join(shown)


def cell(tensors: Sequence[TensorInfo]) -> str:
    text = ", ".join(f"{t.dtype}{shape_text(t.shape).replace(' ', '')}" for t in tensors) or "-"
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."


def shape_text(shape: Optional[tuple[int, ...]]) -> str:
    return "[?]" if shape is None else "[" + ", ".join(str(s) for s in shape) + "]"


def distinct_dtypes(tensors: Iterable[TensorInfo]) -> tuple[str, ...]:
    """The distinct dtypes, in order of first appearance."""
    return tuple(dict.fromkeys(t.dtype for t in tensors))


def attach_note(exc: BaseException, text: str) -> None:
    """Add ``text`` to the exception: a PEP 678 note, else the end of its message.

    Once only (two traces over one model see the same failure), and never at the price
    of the user's exception: an exception that refuses a note keeps its message.
    """
    try:
        if _HAS_NOTES:
            if text not in (getattr(exc, "__notes__", None) or ()):
                exc.add_note(text)
        elif exc.args and isinstance(exc.args[0], str) and text not in exc.args[0]:
            exc.args = (f"{exc.args[0]}\n{text}",) + tuple(exc.args[1:])
    except Exception:
        pass


def first_line(exc: BaseException) -> str:
    text = (split_lines(str(exc).strip()) or [""])[0]  # "\r\n" ends it too, NEL and U+2028 do not
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
