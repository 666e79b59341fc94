"""`mpdoctor audit PATH`: which dtypes a checkpoint or model folder holds, and where they mix.

Safetensors files are read by their header only (no torch, no tensor data), in
bulk (``header_bulk.py``); pickled checkpoints go through ``torch.load(weights_only=
True)`` in one child process of the interpreter under diagnosis for all of them
(``pickles.py``), never an unrestricted unpickle.

The package is not called ``audit`` because that name is the Python API,
``mpdoctor.audit(obj)`` (``api.py``): a subpackage of that name would replace it.
"""
