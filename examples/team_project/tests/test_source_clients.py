"""The plugin's source clients reach the shop's own databases, whatever its tables are called."""

from __future__ import annotations


def test_the_source_clients_reach_the_shops_databases(cdc_postgres_client, cdc_mysql_client):
    with cdc_postgres_client.cursor() as cur:
        cur.execute("SELECT current_database(), count(*) FROM accounts")
        database, rows = cur.fetchone()
    assert database == "shop" and rows > 0
    with cdc_mysql_client.cursor() as cur:
        cur.execute("SELECT DATABASE(), COUNT(*) FROM ledger_entries")
        database, rows = cur.fetchone()
    assert database == "shop_ledger" and rows > 0
