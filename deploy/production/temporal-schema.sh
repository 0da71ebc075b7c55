#!/bin/sh
# Temporal's two databases and their schemas, with Temporal's own temporal-sql-tool (run by
# the temporal-schema service of docker-compose.yml). The connection comes from SQL_PLUGIN,
# SQL_HOST, SQL_PORT, SQL_USER and SQL_PASSWORD, so the password is never on a command line.
# Idempotent: `create` fails only because the database exists (a wrong password or host then
# fails setup-schema, which stops the job); setup-schema keeps an existing version table;
# update-schema applies only the versions the database lacks.
set -eu
SCHEMA=/etc/temporal/schema/postgresql/v12
for pair in "temporal:temporal" "temporal_visibility:visibility"; do
  database=${pair%%:*}
  directory=${pair##*:}
  temporal-sql-tool --db "$database" create 2>/dev/null || echo "database $database exists"
  temporal-sql-tool --db "$database" setup-schema -v 0.0
  temporal-sql-tool --db "$database" update-schema -d "$SCHEMA/$directory/versioned"
done
echo "Temporal schema is up to date"
