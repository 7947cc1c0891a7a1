#!/bin/bash
# The Hive Metastore's login and database, on a fresh volume (the image runs this once, at initialisation).
# `sandbox up` makes the same idempotently (sandbox/stack/services/metastore.py), for volumes older than this script.
set -euo pipefail
psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres \
     -v user="$METASTORE_DB_USER" -v password="$METASTORE_DB_PASSWORD" <<'SQL'
CREATE ROLE :"user" WITH LOGIN PASSWORD :'password';
CREATE DATABASE hive_metastore OWNER :"user";
SQL
