"""MariaDB run as root drops to the package's account. On a fresh machine the first start can run as root (the
package, and so the account, is installed after the service object is made); a later start as the account must
be able to write what that one left, its pid file first."""

from __future__ import annotations

import os
import pwd
from types import SimpleNamespace

import pytest

from cdc_sandbox.stack.services import mariadb
from cdc_sandbox.stack.services.mariadb import MariaDB

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="hands files to another account: needs root")


def test_the_account_is_looked_up_at_each_use(monkeypatch):
    server = MariaDB.__new__(MariaDB)
    monkeypatch.setattr(mariadb, "server_account", lambda: None)
    assert server.run_as is None
    monkeypatch.setattr(mariadb, "server_account", lambda: "nobody")
    assert server.run_as == "nobody"


def test_what_a_root_run_server_left_passes_to_the_account(tmp_path):
    account = pwd.getpwnam("nobody")
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    os.chown(sockets, account.pw_uid, account.pw_gid)  # handed over before, as by an earlier start
    pid_file = sockets / "mariadbd.pid"
    pid_file.write_text("123")  # written by a server that ran as root
    MariaDB._give_to_server_account(SimpleNamespace(run_as="nobody"), sockets, recursive=True)
    assert pid_file.stat().st_uid == account.pw_uid
