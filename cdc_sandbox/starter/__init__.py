"""`sandbox init`: a starter project in a team's repository. The project file with one table of its own DDL, a test
module that runs one oracle round, a GitHub Actions workflow and the state directory in `.gitignore`. A file that is
there already is never overwritten, so running it again changes nothing."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from string import Template

TEMPLATES = files(__name__)
FILES = {  # where in the project -> the template
    "cdc-sandbox.yaml": "cdc-sandbox.yaml.tmpl",
    "ddl/postgres.sql": "postgres.sql.tmpl",
    "tests/test_pipeline.py": "test_pipeline.py.tmpl",
    ".github/workflows/cdc-sandbox.yml": "workflow.yml.tmpl",
}
GITIGNORE = ".gitignore"

WRITTEN, UNCHANGED, KEPT = "written", "already there", "kept: yours differs from the starter"


def project_name(directory: Path) -> str:
    """The directory's name as a database, topic prefix and connector name: lower case, letters, digits, `_`."""
    name = re.sub(r"[^a-z0-9]+", "_", directory.resolve().name.lower()).strip("_")[:40]
    return name if name[:1].isalpha() else f"p_{name}".rstrip("_")


def starter_files(directory: Path) -> dict[str, str]:
    name = project_name(directory)
    values = {"name": name, "bucket": f"{name.replace('_', '-')}-lake"}
    return {path: Template(TEMPLATES.joinpath(template).read_text()).safe_substitute(values)
            for path, template in FILES.items()}


def init(directory: Path) -> list[tuple[str, str]]:
    """Write what is missing; returns (path, what happened) per file."""
    outcomes = []
    for path, text in starter_files(directory).items():
        target = directory / path
        if target.exists():
            outcomes.append((path, UNCHANGED if target.read_text() == text else KEPT))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        outcomes.append((path, WRITTEN))
    return outcomes + [(GITIGNORE, _ignore_state(directory / GITIGNORE))]


def _ignore_state(gitignore: Path) -> str:
    wanted = TEMPLATES.joinpath("gitignore.tmpl").read_text().splitlines()
    present = gitignore.read_text().splitlines() if gitignore.exists() else []
    missing = [line for line in wanted if line not in present]
    if not missing:
        return UNCHANGED
    with gitignore.open("a") as out:
        if present and present[-1].strip():
            out.write("\n")
        out.write("\n".join(missing) + "\n")
    return WRITTEN if not present else "extended"
