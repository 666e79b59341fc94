"""Where fp16 and fp32 meet in a model: ``dtype_trace`` hooks every submodule for one forward pass.

``records`` holds what a trace keeps (dtypes, shapes, names; never a tensor),
``hooks`` the context manager that fills it. Importing this package does not
import torch; a trace does, when it starts.
"""

from mpdoctor.trace.hooks import DtypeTrace, dtype_trace

__all__ = ["DtypeTrace", "dtype_trace"]
