#!/bin/bash
# Runs once, on an empty data directory (docker-entrypoint-initdb.d): the sandbox's admin login and the Debezium
# capture login with the replication grants, as the native backend creates them on MariaDB
# (sandbox/services/mariadb.py). mysql_native_password: PyMySQL logs in without the `cryptography` package.
set -euo pipefail
# The root password through an option file on a pipe (printf is a shell builtin): never on a command line.
mysql --defaults-extra-file=<(printf '[client]\npassword=%s\n' "${MYSQL_ROOT_PASSWORD}") --protocol=socket -uroot <<SQL
CREATE USER IF NOT EXISTS '${SANDBOX_ADMIN_USER}'@'%' IDENTIFIED WITH mysql_native_password BY '${SANDBOX_ADMIN_PASSWORD}';
GRANT ALL PRIVILEGES ON *.* TO '${SANDBOX_ADMIN_USER}'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS '${SANDBOX_CAPTURE_USER}'@'%' IDENTIFIED WITH mysql_native_password BY '${SANDBOX_CAPTURE_PASSWORD}';
GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '${SANDBOX_CAPTURE_USER}'@'%';
CREATE DATABASE IF NOT EXISTS ecomm;
FLUSH PRIVILEGES;
SQL
