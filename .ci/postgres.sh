# Sourced by .ci/run: make sure a PostgreSQL server answers and set MONITOR_TEST_PG.
# 1. the server on 127.0.0.1:5432 if it answers; 2. the machine's cluster, started;
# 3. Debian's postgresql installed and a throwaway cluster started on port 54329.

pg_answers() {
  python - "$1" <<'PY'
import sys, psycopg
url = sys.argv[1].replace("postgresql+psycopg://", "postgresql://")
try:
    psycopg.connect(url, connect_timeout=3).close()
except Exception as exc:
    sys.exit(1)
PY
}

ensure_postgres() {
  local url="postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
  if [ -n "${MONITOR_TEST_PG:-}" ] && pg_answers "$MONITOR_TEST_PG"; then
    echo "PostgreSQL: using MONITOR_TEST_PG"; return
  fi
  if pg_answers "$url"; then
    MONITOR_TEST_PG=$url; echo "PostgreSQL: answering on 127.0.0.1:5432"; return
  fi
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    local ver
    ver=$(ls /etc/postgresql | sort -V | tail -n 1)
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start 2>/dev/null || true
    for _ in $(seq 1 20); do
      if pg_answers "$url"; then MONITOR_TEST_PG=$url; echo "PostgreSQL: started cluster $ver/main"; return; fi
      sleep 0.5
    done
  fi
  echo "PostgreSQL: installing a throwaway cluster"
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  local bin data port=54329
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  data=$(mktemp -d /tmp/monitor-pg.XXXXXX)
  id -u postgres >/dev/null 2>&1 || useradd --system --home "$data" postgres
  chown postgres "$data"
  su postgres -s /bin/sh -c "$bin/initdb -D $data/db -A trust -U postgres >/dev/null"
  su postgres -s /bin/sh -c "$bin/pg_ctl -D $data/db -o '-p $port -k $data -c listen_addresses=127.0.0.1' -l $data/log -w start >/dev/null"
  MONITOR_TEST_PG="postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
  pg_answers "$MONITOR_TEST_PG" || { echo "PostgreSQL could not be started"; cat "$data/log"; exit 1; }
  echo "PostgreSQL: throwaway cluster on port $port"
}
