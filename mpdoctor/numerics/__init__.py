"""Where fp16/bf16 values leave their range in a model, forward and backward, and what to do about it.

``numerics_watch`` (``watch``) observes every op of a training step and names the first module whose
values overflow, turn NaN or underflow (``modules`` says which module runs, ``record`` is the dispatch mode's hot
path, ``window`` the statistics it queues and their one host read, ``judge`` the rules); ``verify`` re-runs the
step with the fix applied; ``numerics_compare`` (``compare``) measures each module's own error against an fp32
reference of the same step; ``callbacks`` runs the watch inside the transformers Trainer and Lightning;
``runner`` is the child process of ``mpdoctor numerics``. Importing this package does not import torch.
"""

from mpdoctor.numerics.compare import CompareReport, numerics_compare
from mpdoctor.numerics.events import Event, ScalerStep, Verification
from mpdoctor.numerics.watch import NumericsWatch, numerics_watch

__all__ = [
    "CompareReport",
    "Event",
    "NumericsWatch",
    "ScalerStep",
    "Verification",
    "numerics_compare",
    "numerics_watch",
]
