"""The typer application every command registers on, and its root options."""

from __future__ import annotations

from typing import Annotated

import typer

from mpdoctor import __version__

app = typer.Typer(
    help="Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mpdoctor {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups."""
