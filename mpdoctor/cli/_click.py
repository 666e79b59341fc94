"""The click that typer runs on, whichever typer is installed: the one place mpdoctor reaches click.

typer 0.26 and newer carry their own copy of click (``typer._click``) and raise its exceptions; older
typer runs on the separate ``click`` package (the only one Python 3.9 gets: typer 0.24 needs 3.10). Which
one is in use is read from typer's public API: ``typer.BadParameter`` is click's own exception, re-exported,
so its module is ``typer._click.exceptions`` or ``click.exceptions``. Importing ``click`` by name would be
wrong beside a vendoring typer: a ``click`` installed for another tool raises exceptions typer never does,
and typer's errors would escape as tracebacks.
"""

from __future__ import annotations

import importlib
from typing import Optional

import typer

PACKAGE = typer.BadParameter.__module__.rpartition(".")[0]  # "typer._click" or "click"

core = importlib.import_module(f"{PACKAGE}.core")
exceptions = importlib.import_module(f"{PACKAGE}.exceptions")
formatting = importlib.import_module(f"{PACKAGE}.formatting")
_globals = importlib.import_module(f"{PACKAGE}.globals")
_utils = importlib.import_module(f"{PACKAGE}.utils")

Context = core.Context
HelpFormatter = formatting.HelpFormatter
ClickException = exceptions.ClickException
UsageError = exceptions.UsageError  # BadParameter, NoSuchOption, MissingParameter... are UsageErrors
echo = _utils.echo
get_current_context = _globals.get_current_context
# click 8.2+ raises it for a group run with no arguments (no_args_is_help); click 8.1 (Python 3.9's last)
# prints the help itself and exits 0, so mpdoctor.cli.app.run handles that case before click sees it.
NoArgsIsHelpError: Optional[type] = getattr(exceptions, "NoArgsIsHelpError", None)

__all__ = [
    "ClickException",
    "Context",
    "HelpFormatter",
    "NoArgsIsHelpError",
    "UsageError",
    "echo",
    "formatting",
    "get_current_context",
]
