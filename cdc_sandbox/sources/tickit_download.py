"""Fetching the published TICKIT sample (`tickitdb.zip`) when the machine is online."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import requests

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.tickit_data import TABLES

# The Amazon Redshift getting-started guide publishes the sample here; SANDBOX_TICKIT_URL overrides it.
TICKIT_URL = "https://docs.aws.amazon.com/redshift/latest/gsg/samples/tickitdb.zip"


def fetch(settings: Settings) -> Path:
    """Download and unpack tickitdb.zip into `<state>/tickit/real`, once; returns that directory."""
    target = settings.state_dir / "tickit" / "real"
    if all((target / t.tickit_file).is_file() for t in TABLES):
        return target
    url = settings.env.get("SANDBOX_TICKIT_URL", TICKIT_URL)
    try:
        response = requests.get(url, timeout=30)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise SandboxError(
            f"cannot download TICKIT from {url}: {type(exc).__name__}; this machine looks offline",
            "load generated data instead (`sandbox load`, same tables and row counts), or copy the files of "
            "tickitdb.zip into a directory and run `sandbox load --from DIR`",
        ) from None
    try:
        archive = zipfile.ZipFile(io.BytesIO(response.content))
    except zipfile.BadZipFile:
        raise SandboxError(f"{url} did not send a zip file ({len(response.content)} bytes of "
                           f"{response.headers.get('Content-Type', 'unknown type')})", _OTHER_WAYS) from None
    files = {Path(member).name: member for member in archive.namelist()}
    missing = [t.tickit_file for t in TABLES if t.tickit_file not in files]
    if missing:
        raise SandboxError(f"the zip from {url} is not TICKIT: it lacks {', '.join(missing)}", _OTHER_WAYS)
    target.mkdir(parents=True, exist_ok=True)
    for table in TABLES:
        (target / table.tickit_file).write_bytes(archive.read(files[table.tickit_file]))
    return target


_OTHER_WAYS = ("check SANDBOX_TICKIT_URL, or load generated data instead (`sandbox load`), or copy the files of "
               "tickitdb.zip into a directory and run `sandbox load --from DIR`")
