"""The documentation: the README stays a front page, the reference pages say what the code has, and the site builds
with every internal link and anchor resolving."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tokenize

import yaml

from tests import PROJECT_ROOT
from tests import reference_docs

README_LINES = 300


def test_the_readme_is_a_front_page():
    lines = (PROJECT_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_the_reference_pages_say_what_the_code_has():
    stale = reference_docs.stale_pages()
    assert not stale, f"{[str(p.relative_to(PROJECT_ROOT)) for p in stale]}: run `python -m tests.reference_docs`"


def test_every_command_and_fixture_is_in_the_reference():
    """Read the other way from the generated pages: each name the code declares has its own entry."""
    from cdc_sandbox.cli import app
    from cdc_sandbox.harness.driving import pytest_plugin
    import typer

    cli = reference_docs.CLI_PAGE.read_text()
    root = typer.main.get_command(app)
    for name, command in root.commands.items():
        assert f"`sandbox {name}`" in cli, name
        for sub in getattr(command, "commands", {}):
            assert f"`sandbox {name} {sub}`" in cli, f"{name} {sub}"
    fixtures = reference_docs.FIXTURES_PAGE.read_text()
    for name, _, _ in reference_docs.plugin_fixtures(pytest_plugin):
        assert f"`{name}`" in fixtures, name
    for short in pytest_plugin.SHORT_NAMES:
        assert f"`{short}`" in fixtures, short


def test_every_page_is_in_the_navigation():
    config = yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text())
    listed = set(_pages(config["nav"]))
    present = {str(p.relative_to(reference_docs.DOCS)) for p in reference_docs.DOCS.rglob("*.md")}
    assert present == listed, f"not in the nav: {sorted(present - listed)}; missing: {sorted(listed - present)}"


def test_the_site_builds_with_every_link_resolving(tmp_path):
    quiet_theme = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # the theme's banner about a future MkDocs, not ours
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir",
                            str(tmp_path / "site")], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                           env=quiet_theme)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()


def _pages(nav):
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from _pages(value)
        else:
            yield value


def test_the_readmes_links_lead_to_files_of_the_repository():
    readme = (PROJECT_ROOT / "README.md").read_text()
    targets = {target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", readme)
               if not target.startswith(("http://", "https://"))}
    missing = sorted(target for target in targets if not (PROJECT_ROOT / target).exists())
    assert not missing, f"README.md links to files that are not there: {missing}"


# A number with a unit of time: a measurement, which belongs in `make bench`'s output or a closing note, not in code.
TIMING_FIGURE = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:-\s?\d+(?:[.,]\d+)?\s?)?"
                           r"(?:s|ms|min|minutes|seconds|CPU-seconds|core-seconds)\b")


def test_no_comment_in_the_package_carries_a_timing_figure():
    found = []
    for path in sorted((PROJECT_ROOT / "cdc_sandbox").rglob("*.py")):
        for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if token.type == tokenize.COMMENT and TIMING_FIGURE.search(token.string):
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{token.start[0]}: {token.string.strip()}")
    assert not found, "comments give the reason, not the measurement:\n" + "\n".join(found)
