"""Files holding secrets or row values are readable by their owner only, also when an older sandbox left them open."""

from __future__ import annotations

import stat

from cdc_sandbox.config import Settings
from cdc_sandbox.sources.mutations import Change, Journal
from cdc_sandbox.stack.credentials import ensure_credentials


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_change_journal_is_private_even_if_it_existed_open(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text("")
    path.chmod(0o644)
    Journal(path).append(Change(seq=1, kind="update", table="category", topic="t", key={"catid": 1}))
    assert mode(path) == 0o600


def test_the_credentials_file_is_private_even_if_it_existed_open(tmp_path):
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state")})
    ensure_credentials(settings)
    settings.secrets_file.chmod(0o644)
    ensure_credentials(settings)
    assert mode(settings.secrets_file) == 0o600
    assert mode(settings.secrets_file.parent) == 0o700
