#!/bin/bash
# The Hive Metastore's login, its database and the catalog's tables (the release's schema script, mounted from what
# `sandbox up` resolved), on a fresh volume: the image runs this once, at initialisation. `sandbox up` does the same
# idempotently (cdc_sandbox/stack/services/metastore.py) for a volume older than this script.
set -euo pipefail
database=${METASTORE_DB:-hive_metastore}
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres \
     -v user="$METASTORE_DB_USER" -v password="$METASTORE_DB_PASSWORD" -v database="$database" <<'SQL'
CREATE ROLE :"user" WITH LOGIN PASSWORD :'password';
CREATE DATABASE :"database" OWNER :"user";
SQL
schema=$(find "${METASTORE_SCHEMA_DIR:-/opt/metastore-schema}" -name 'hive-schema-*.postgres.sql' | sort | tail -n 1)
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$database" -c "SET ROLE \"$METASTORE_DB_USER\"" -f "$schema"
