#!/bin/bash
# SQL Server with CDC set up by the generated script (cdc_sandbox/fixtures/sql/sqlserver/init.sql, from cdc_sandbox/stack/services/sqlserver_cdc.py).
#   entrypoint.sh          start the server, run the script once it answers, then stay with the server
#   entrypoint.sh health   healthy when the server answers and CDC captures the source tables
set -euo pipefail
# Images from SQL Server 2022 CU 14 on ship sqlcmd in /opt/mssql-tools18 only, older ones in /opt/mssql-tools only
# (the image's overview on Docker Hub, and microsoft/mssql-docker issue 892): take the one that is there.
SQLCMD=""
for candidate in /opt/mssql-tools18/bin/sqlcmd /opt/mssql-tools/bin/sqlcmd; do
  if [ -x "$candidate" ]; then SQLCMD=$candidate; break; fi
done
if [ -z "$SQLCMD" ]; then echo "no sqlcmd in /opt/mssql-tools18/bin or /opt/mssql-tools/bin" >&2; exit 1; fi
# The password goes in through sqlcmd's environment variable, never on its command line (any local user sees those).
sql() { SQLCMDPASSWORD="$MSSQL_SA_PASSWORD" "$SQLCMD" -S localhost -U sa -C -b -l 5 "$@"; }

if [ "${1:-}" = "health" ]; then
  exec > /dev/null
  sql -Q "SET NOCOUNT ON; IF NOT EXISTS (SELECT 1 FROM tickit.sys.tables WHERE is_tracked_by_cdc = 1) THROW 50000, 'CDC is not set up yet', 1"
  exit
fi

/opt/mssql/bin/sqlservr &
server=$!
# This script is PID 1, and the kernel gives PID 1 no default action for SIGTERM: without this trap `docker stop`
# would wait out its grace period and kill sqlservr, where forwarding the signal lets it shut down cleanly.
trap 'kill -TERM "$server" 2>/dev/null; wait "$server"; exit $?' TERM INT
until sql -Q "SELECT 1" > /dev/null 2>&1; do
  kill -0 "$server" 2>/dev/null || { echo "sqlservr exited during start-up" >&2; exit 1; }
  sleep 1
done
# sqlcmd reads CAPTURE_USER and CAPTURE_PASSWORD from the environment as scripting variables.
sql -i /sandbox/init.sql
echo "sandbox: CDC set up on $(sql -h -1 -Q "SET NOCOUNT ON; SELECT COUNT(*) FROM tickit.sys.tables WHERE is_tracked_by_cdc = 1") table(s)"
wait "$server"
