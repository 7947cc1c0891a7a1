"""The `sandbox` command: bring the CDC stack up and down, inspect it, read its logs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import typer
from rich.console import Console
from rich.table import Table

from sandbox.backends import native
from sandbox.config import Settings
from sandbox.errors import SandboxError

app = typer.Typer(help="Local CDC data-lake sandbox: Postgres, MariaDB, Kafka, Debezium, Apicurio, S3.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
console = Console()


def _report(name: str, outcome: str) -> None:
    console.print(f"  [bold]{name:<22}[/bold] {outcome}")


def _fail(exc: SandboxError) -> None:
    console.print(f"[red]error:[/red] {exc.message}", highlight=False)
    if exc.hint:
        console.print(f"[yellow]what to do:[/yellow] {exc.hint}", highlight=False)
    raise typer.Exit(1)


@app.command()
def up(skip_install: bool = typer.Option(False, help="Do not check or install packages, jars or LocalStack.")):
    """Install what is missing, start every service, register the connectors, print the status."""
    settings = Settings.load()
    started = time.monotonic()
    console.print(f"[bold]sandbox up[/bold] (native backend, state in {settings.state_dir})")
    try:
        with console.status("working…"):
            native.up(settings, _report, skip_install=skip_install)
    except SandboxError as exc:
        _fail(exc)
    console.print(f"ready in {time.monotonic() - started:.1f} s")
    _print_status(settings)


@app.command()
def down():
    """Stop every service; data stays in the state directory."""
    settings = Settings.load()
    native.down(settings, _report)


@app.command()
def status():
    """Show every service and connector: state, address, pid, version."""
    try:
        _print_status(Settings.load())
    except SandboxError as exc:
        _fail(exc)


def _print_status(settings: Settings) -> None:
    statuses, connectors = native.status(settings)
    table = Table(title="services")
    for column in ("service", "state", "address", "pid", "version"):
        table.add_column(column)
    colours = {"running": "green", "external": "cyan", "stopped": "red", "unreachable": "red", "starting": "yellow"}
    for st in statuses:
        colour = colours.get(st.state, "white")
        table.add_row(st.service, f"[{colour}]{st.state}[/{colour}]", st.address, str(st.pid or "-"), st.version)
    console.print(table)
    ctable = Table(title="connectors")
    ctable.add_column("connector")
    ctable.add_column("state")
    for name, state in connectors:
        ctable.add_row(name, state)
    console.print(ctable)


@app.command()
def logs(service: str, lines: int = typer.Option(50, "-n", help="How many lines from the end."),
         follow: bool = typer.Option(False, "-f", help="Keep printing new lines.")):
    """Print the log of one service."""
    settings = Settings.load()
    try:
        svc = native.service(settings, service)
    except SandboxError as exc:
        _fail(exc)
    if not svc.log_file.exists():
        _fail(SandboxError(f"{service} has no log yet at {svc.log_file}", "run `make up` first"))
    command = ["tail", "-n", str(lines)] + (["-F"] if follow else []) + [str(svc.log_file)]
    sys.exit(subprocess.call(command))


@app.command()
def reset(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask.")):
    """Stop everything and delete the state directory (data, logs, secrets). Installed tools stay."""
    settings = Settings.load()
    if not yes and not typer.confirm(f"delete {settings.state_dir} and all data in it?"):
        raise typer.Exit(1)
    native.down(settings, _report)
    shutil.rmtree(settings.state_dir, ignore_errors=True)
    console.print(f"removed {settings.state_dir}")


if __name__ == "__main__":
    app()
