#!/bin/bash
# SQL Server with CDC set up by the generated script (fixtures/sql/sqlserver/init.sql, from sandbox/mssql.py).
#   entrypoint.sh          start the server, run the script once it answers, then stay with the server
#   entrypoint.sh health   healthy when the server answers and CDC captures the source tables
set -euo pipefail
SQLCMD=$(ls /opt/mssql-tools18/bin/sqlcmd /opt/mssql-tools/bin/sqlcmd 2>/dev/null | head -n 1)
# The password goes in through sqlcmd's environment variable, never on its command line (any local user sees those).
sql() { SQLCMDPASSWORD="$MSSQL_SA_PASSWORD" "$SQLCMD" -S localhost -U sa -C -b -l 5 "$@"; }

if [ "${1:-}" = "health" ]; then
  exec > /dev/null
  sql -Q "SET NOCOUNT ON; IF NOT EXISTS (SELECT 1 FROM tickit.sys.tables WHERE is_tracked_by_cdc = 1) THROW 50000, 'CDC is not set up yet', 1"
  exit
fi

/opt/mssql/bin/sqlservr &
server=$!
until sql -Q "SELECT 1" > /dev/null 2>&1; do
  kill -0 "$server" 2>/dev/null || { echo "sqlservr exited during start-up" >&2; exit 1; }
  sleep 1
done
# sqlcmd reads CAPTURE_USER and CAPTURE_PASSWORD from the environment as scripting variables.
sql -i /sandbox/init.sql
echo "sandbox: CDC set up on $(sql -h -1 -Q "SET NOCOUNT ON; SELECT COUNT(*) FROM tickit.sys.tables WHERE is_tracked_by_cdc = 1") table(s)"
wait "$server"
