"""Fetching the published TICKIT sample (`tickitdb.zip`) when the machine is online."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import requests

from sandbox.config import Settings
from sandbox.errors import SandboxError
from tickit_data import TABLES

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
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        for member in archive.namelist():
            name = Path(member).name
            if name in {t.tickit_file for t in TABLES}:
                (target / name).write_bytes(archive.read(member))
    return target
