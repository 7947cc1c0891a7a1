"""Every service's connection settings under the names its own clients read (`sandbox env`), so that
`eval "$(sandbox env)"` points psql, mysql, kafka tools, boto3 and the AWS CLI at the sandbox.

Names starting with SANDBOX_ are left out on purpose: the sandbox reads those as overrides (a SANDBOX_POSTGRES_HOST
would make Postgres external).
"""

from __future__ import annotations

from cdc_sandbox.config import REGISTRY_API, Settings
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.services.localstack import ACCESS_KEY, REGION, SECRET_KEY
from cdc_sandbox.stack.services.metastore import thrift_uri


def connection_env(settings: Settings) -> dict[str, str]:
    sources = settings.topology.sources
    postgres, mysql = settings.endpoint("postgres"), settings.endpoint("mysql")
    pg_login, mysql_login = login(settings, "postgres", "admin"), login(settings, "mysql", "admin")
    return {
        # libpq's own variables: psql, pg_dump, psycopg2
        "PGHOST": postgres.host, "PGPORT": str(postgres.port), "PGUSER": pg_login.user,
        "PGPASSWORD": pg_login.password,
        "PGDATABASE": sources["postgres"].database if "postgres" in sources else "postgres",
        # the mysql and mariadb clients read MYSQL_HOST, MYSQL_TCP_PORT and MYSQL_PWD
        "MYSQL_HOST": mysql.host, "MYSQL_TCP_PORT": str(mysql.port), "MYSQL_USER": mysql_login.user,
        "MYSQL_PWD": mysql_login.password,
        "MYSQL_DATABASE": sources["mysql"].database if "mysql" in sources else "",
        "KAFKA_BOOTSTRAP_SERVERS": settings.endpoint("kafka").address,
        "KAFKA_CONNECT_URL": settings.url("connect"),
        "APICURIO_REGISTRY_URL": settings.url("apicurio") + REGISTRY_API,
        # boto3 and the AWS CLI take the endpoint from AWS_ENDPOINT_URL; LocalStack accepts these keys
        "AWS_ENDPOINT_URL": settings.url("localstack"), "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": REGION,
        "LAKE": f"s3a://{settings.topology.lake_bucket}",
        "HIVE_METASTORE_URIS": thrift_uri(settings),
    }
