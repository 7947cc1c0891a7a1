#!/bin/bash
# Runs once, on an empty data directory (docker-entrypoint-initdb.d): the sandbox's admin login and the Debezium
# capture login with the replication grants, as the native backend creates them on MariaDB
# (cdc_sandbox/stack/services/mariadb.py). mysql_native_password: PyMySQL logs in without the `cryptography` package (the
# plugin is off by default from MySQL 8.4: a bump past 8.0 changes this). The temporary init server already runs
# with --log-bin: like the entrypoint's own set-up, the logins stay out of the binlog the capture login reads.
# Executable on purpose: the image's entrypoint runs an executable *.sh and sources any other, and this script's
# `set -u` would then abort the entrypoint (docker-library/mysql 8.0 docker-entrypoint.sh, docker_process_init_files).
set -euo pipefail
# The root password through an option file on a pipe (printf is a shell builtin): never on a command line.
mysql --defaults-extra-file=<(printf '[client]\npassword=%s\n' "${MYSQL_ROOT_PASSWORD}") --protocol=socket -uroot <<SQL
SET SESSION sql_log_bin = 0;
CREATE USER IF NOT EXISTS '${SANDBOX_ADMIN_USER}'@'%' IDENTIFIED WITH mysql_native_password BY '${SANDBOX_ADMIN_PASSWORD}';
GRANT ALL PRIVILEGES ON *.* TO '${SANDBOX_ADMIN_USER}'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS '${SANDBOX_CAPTURE_USER}'@'%' IDENTIFIED WITH mysql_native_password BY '${SANDBOX_CAPTURE_PASSWORD}';
GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '${SANDBOX_CAPTURE_USER}'@'%';
CREATE DATABASE IF NOT EXISTS ecomm;
FLUSH PRIVILEGES;
SQL
