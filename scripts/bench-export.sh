#!/usr/bin/env bash
# bench-export.sh: how fast `memwho export` streams a big history to
# gzipped CSV, and how much memory it needs doing so, next to PostgreSQL's
# own `psql \copy ... | gzip` on the same rows in the same run.
#
#   scripts/bench-export.sh                  # 25 million rows (PostgreSQL), 5 million (SQLite)
#   ROWS=1000000 SQLITE_ROWS=1000000 scripts/bench-export.sh   # a quick run
#   OLD_MEMWHO=/tmp/memwho-old scripts/bench-export.sh           # also an older build, interleaved
#
# It needs root (PostgreSQL runs as the postgres user), Debian's
# postgresql, sqlite3 and time packages, and about 10 GB of disk under
# $TMPDIR for 25 million rows. It starts its own PostgreSQL cluster on
# 127.0.0.1 at a free port in a temporary directory and removes
# everything when done. Rows are generated in SQL (generate_series /
# recursive CTE), shaped like `memwho record` history: 100 usage rows per
# sample (70 processes, 20 programs, 5 users, 5 cgroups), 4 hosts, one
# sample every 10 s per host.
#
# Reported per run: wall time, CPU time of the client side (user + system
# of memwho, or of psql/sqlite3 and gzip together; not the PostgreSQL
# server's), rows/s, MB/s of CSV (uncompressed, 10^6 bytes), output size,
# and peak RSS ("Maximum resident set size" of /usr/bin/time -v). The outputs of memwho and psql are compared
# after gunzip: they must be the same bytes. With OLD_MEMWHO set to another
# memwho binary (say, a build of the previous commit), every memwho
# measurement is preceded by the same one with that binary (lines named
# old-...), in the same run, and both must write the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${ROWS:-25000000}
SQLITE_ROWS=${SQLITE_ROWS:-5000000}
PER_SAMPLE=100
RSS_LIMIT_KIB=$((64 * 1024))
OLD_MEMWHO=${OLD_MEMWHO:-}
if [ -n "$OLD_MEMWHO" ]; then
  OLD_MEMWHO=$(realpath "$OLD_MEMWHO")
  [ -x "$OLD_MEMWHO" ] || { echo "bench-export.sh: OLD_MEMWHO=$OLD_MEMWHO is not executable" >&2; exit 1; }
fi

[ "$(id -u)" = 0 ] || { echo "bench-export.sh: run as root (PostgreSQL runs as the postgres user)" >&2; exit 1; }
for p in postgresql sqlite3 time; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "bench-export.sh: installing $p"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
  fi
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/memwho-bench-export.XXXXXX")
chmod 755 "$work"
pgpid=""
cleanup() {
  if [ -n "$pgpid" ]; then kill "$pgpid" 2>/dev/null || true; wait "$pgpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build"
CGO_ENABLED=0 go build -trimpath -o "$work/" ./cmd/memwho ./cmd/memwho-agent
memwho="$work/memwho"

echo "== PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') cluster in $work/pg"
mkdir "$work/pg" && chown postgres: "$work/pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$work/pg/data" -U memwho --auth=trust -E UTF8 --locale=C --no-sync >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$PGBIN/postgres" -D "$work/pg/data" -p "$port" -c listen_addresses=127.0.0.1 \
  -c unix_socket_directories="$work/pg" -c fsync=off -c full_page_writes=off -c synchronous_commit=off \
  -c shared_buffers=512MB -c work_mem=256MB -c maintenance_work_mem=1GB -c max_wal_size=8GB \
  >"$work/pg/log" 2>&1 &
pgpid=$!
for _ in $(seq 100); do
  psql -h 127.0.0.1 -p "$port" -U memwho -d postgres -qAtc 'select 1' >/dev/null 2>&1 && break
  sleep 0.2
done
psql -h 127.0.0.1 -p "$port" -U memwho -d postgres -qc 'CREATE DATABASE bench' >/dev/null
url="postgres://memwho@127.0.0.1:$port/bench?sslmode=disable"
psql_() { psql -h 127.0.0.1 -p "$port" -U memwho -d bench -v ON_ERROR_STOP=1 -qAt "$@"; }

# The schema is whatever this build of memwho creates: let `memwho record`
# create it with one real sample, then drop that sample.
"$memwho" record --once --db "$url" --spool "$work/spool" >/dev/null
psql_ -c 'DELETE FROM usage; DELETE FROM samples;'

samples=$(( (ROWS + PER_SAMPLE - 1) / PER_SAMPLE ))
# Shared SQL expressions (PostgreSQL and SQLite spell them alike): g is the
# sample number, r the row within the sample.
host="'host-' || (g % 4)"
kind="CASE WHEN r < 70 THEN 'process' WHEN r < 90 THEN 'program' WHEN r < 95 THEN 'user' ELSE 'cgroup' END"
names="'systemd','sshd','postgres: walwriter','nginx: worker process','python3 app.py','java','node','bash','containerd','kubelet','chrome --type=renderer','Web Content'"
usage_cols="sample_id, seq, kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free"

echo "== generate $ROWS rows ($samples samples) in PostgreSQL"
t0=$(date +%s.%N)
psql_ <<SQL
INSERT INTO samples (ts, host, boot_id, mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb, procs, denied)
SELECT 1772366400000 + (g / 4) * 10000, $host, '6c1f3a52-9d1e-4c57-a1a4-' || lpad((g % 4)::text, 12, '0'),
       17179869184, 1073741824 + (g % 977) * 4096, 8589934592 - (g % 1009) * 1048576, 104857600, 4294967296, 33554432,
       4294967296, 4294967296 - (g % 101) * 65536, 0, 70, 0
FROM generate_series(0, $samples - 1) g;
INSERT INTO usage ($usage_cols)
SELECT s.id, r, $kind,
       CASE WHEN r < 95 THEN (ARRAY[$names])[1 + r % 12] ELSE '/system.slice/unit-' || r || '.service' END,
       CASE WHEN r < 70 THEN 1000 + r * 17 ELSE 0 END,
       CASE WHEN r < 70 THEN 123456 + r * 1000 ELSE 0 END,
       CASE WHEN r < 70 THEN 1 ELSE 3 + r % 5 END,
       (r + 1) * 1048576 + (s.id % 1000) * 4096, (r + 1) * 786432 + (s.id % 500) * 4096, (r + 1) * 262144,
       (s.id % 7) * 4096, (r % 11 = 0)::int, CASE WHEN r >= 95 THEN 2147483648 ELSE 0 END,
       CASE WHEN r >= 95 THEN 2147483648 - (r + 1) * 1048576 ELSE 0 END
FROM samples s CROSS JOIN generate_series(0, $PER_SAMPLE - 1) r;
VACUUM ANALYZE samples;
VACUUM ANALYZE usage;
SQL
rows=$(psql_ -c 'SELECT count(*) FROM usage')
echo "generated $rows rows in $(printf '%.0f' "$(echo "$(date +%s.%N) - $t0" | bc)") s; database $(psql_ -c "SELECT pg_size_pretty(pg_database_size('bench'))")"

# measure NAME ROWS OUT COMMAND...: runs COMMAND under /usr/bin/time -v,
# then prints wall time, rows/s, MB/s of CSV (the size of the plain
# export, $csvbytes), output size and peak RSS, and appends that line to
# $results.
declare -A rss
results=""
measure() {
  local name=$1 rows=$2 out=$3; shift 3
  /usr/bin/time -v -o "$work/time.$name" "$@"
  local wall
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.$name")
  rss[$name]=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.$name")
  local cpu
  cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ {s += $2} END {print s}' "$work/time.$name")
  [ -n "${csvbytes:-}" ] || csvbytes=$(stat -c %s "$out")
  local line
  line=$(awk -v n="$name" -v w="$wall" -v c="$cpu" -v r="$rows" -v b="$csvbytes" -v o="$(stat -c %s "$out")" -v rss="${rss[$name]}" 'BEGIN {
    printf "%-20s %7.1f s %7.1f s CPU %10.0f rows/s %7.1f MB/s CSV %8.1f MB out %7.1f MiB peak RSS", n, w, c, r / w, b / w / 1e6, o / 1e6, rss / 1024 }')
  echo "$line"
  results+="$line"$'\n'
}

# measure_memwho NAME ROWS OUT ARGS...: measure "memwho export ARGS -o
# OUT", first with $OLD_MEMWHO when set (as old-NAME; its output must be
# the same bytes).
oldsame=""
measure_memwho() {
  local name=$1 rows=$2 out=$3; shift 3
  if [ -n "$OLD_MEMWHO" ]; then
    measure "old-$name" "$rows" "$out.old" "$OLD_MEMWHO" export "$@" -o "$out.old"
    measure "$name" "$rows" "$out" "$memwho" export "$@" -o "$out"
    if ! cmp -s "$out.old" "$out"; then
      oldsame+="MISMATCH between old and new memwho in $name"$'\n'
    fi
    rm -f "$out.old"
  else
    measure "$name" "$rows" "$out" "$memwho" export "$@" -o "$out"
  fi
}

# The SELECT of memwho's COPY (store/postgres ExportSQL with no bounds),
# for psql's \copy.
cat >"$work/copy.sql" <<'SQL'
\copy (SELECT to_char(timestamp 'epoch' + s.ts * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time, s.host, u.kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free FROM samples s JOIN usage u ON u.sample_id = s.id ORDER BY s.ts, s.host COLLATE "C", s.id, u.seq) to stdout with (format csv, header)
SQL
psqlcopy="psql -h 127.0.0.1 -p $port -U memwho -d bench -q -f $work/copy.sql"

echo "== PostgreSQL: $rows rows"
# Warm the server's cache once; every run below reads the same way.
$psqlcopy >/dev/null
csvbytes=""
measure_memwho pg-memwho-plain "$rows" "$work/pg.csv" --db "$url"
measure pg-psql-plain "$rows" "$work/psql.csv" sh -c "$psqlcopy > $work/psql.csv"
if cmp -s "$work/pg.csv" "$work/psql.csv"; then
  same="memwho and psql wrote the same CSV ($csvbytes bytes)"
else
  same="MISMATCH between the CSV of memwho and psql"
fi
rm -f "$work/pg.csv" "$work/psql.csv"
measure_memwho pg-memwho-gzip "$rows" "$work/pg.csv.gz" --db "$url" --gzip
measure pg-psql-gzip "$rows" "$work/psql.csv.gz" sh -c "$psqlcopy | gzip > $work/psql.csv.gz"
gzip -dc "$work/pg.csv.gz" | sha256sum >"$work/a"
gzip -dc "$work/psql.csv.gz" | sha256sum >"$work/b"
cmp -s "$work/a" "$work/b" || same="MISMATCH between the gunzipped outputs of memwho and psql"
echo "$same"
rm -f "$work/pg.csv.gz" "$work/psql.csv.gz"

echo "== SQLite: $SQLITE_ROWS rows"
db="$work/history.db"
"$memwho" record --once --db "$db" >/dev/null
lsamples=$(( (SQLITE_ROWS + PER_SAMPLE - 1) / PER_SAMPLE ))
sqlite3 "$db" >/dev/null <<SQL
PRAGMA journal_mode=OFF;
PRAGMA synchronous=OFF;
DELETE FROM usage; DELETE FROM samples;
BEGIN;
WITH RECURSIVE n(g) AS (SELECT 0 UNION ALL SELECT g + 1 FROM n WHERE g < $lsamples - 1)
INSERT INTO samples (id, ts, host, boot_id, mem_total, mem_free, mem_available, buffers, cached, shmem, swap_total, swap_free, hugetlb, procs, denied)
SELECT g + 1, 1772366400000 + (g / 4) * 10000, $host, '6c1f3a52-9d1e-4c57-a1a4-' || substr('000000000000' || (g % 4), -12),
       17179869184, 1073741824 + (g % 977) * 4096, 8589934592 - (g % 1009) * 1048576, 104857600, 4294967296, 33554432,
       4294967296, 4294967296 - (g % 101) * 65536, 0, 70, 0 FROM n;
CREATE TEMP TABLE names (i INTEGER PRIMARY KEY, name TEXT);
INSERT INTO names (name) VALUES ($(echo "$names" | sed "s/','/'),('/g"));
WITH RECURSIVE rr(r) AS (SELECT 0 UNION ALL SELECT r + 1 FROM rr WHERE r < $PER_SAMPLE - 1)
INSERT INTO usage ($usage_cols)
SELECT s.id, r, $kind,
       CASE WHEN r < 95 THEN (SELECT name FROM names WHERE i = 1 + r % 12) ELSE '/system.slice/unit-' || r || '.service' END,
       CASE WHEN r < 70 THEN 1000 + r * 17 ELSE 0 END,
       CASE WHEN r < 70 THEN 123456 + r * 1000 ELSE 0 END,
       CASE WHEN r < 70 THEN 1 ELSE 3 + r % 5 END,
       (r + 1) * 1048576 + (s.id % 1000) * 4096, (r + 1) * 786432 + (s.id % 500) * 4096, (r + 1) * 262144,
       (s.id % 7) * 4096, (r % 11 = 0), CASE WHEN r >= 95 THEN 2147483648 ELSE 0 END,
       CASE WHEN r >= 95 THEN 2147483648 - (r + 1) * 1048576 ELSE 0 END
FROM samples s CROSS JOIN rr ORDER BY s.id, r;
COMMIT;
SQL
lrows=$(sqlite3 "$db" 'SELECT count(*) FROM usage')
echo "generated $lrows rows; database $(du -h "$db" | cut -f1)"
cat "$db" >/dev/null # warm the page cache
csvbytes=""
litesql="SELECT strftime('%Y-%m-%dT%H:%M:%fZ', s.ts / 1000.0, 'unixepoch') AS time, s.host, u.kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free FROM samples s JOIN usage u ON u.sample_id = s.id ORDER BY s.ts, s.host, s.id, u.seq"
measure_memwho lite-memwho-plain "$lrows" "$work/lite.csv" --db "$db"
rm -f "$work/lite.csv"
measure lite-sqlite3-plain "$lrows" "$work/sqlite3.csv" sh -c "sqlite3 -csv -header '$db' \"$litesql\" > '$work/sqlite3.csv'"
rm -f "$work/sqlite3.csv"
measure_memwho lite-memwho-gzip "$lrows" "$work/lite.csv.gz" --db "$db" --gzip
measure lite-sqlite3-gzip "$lrows" "$work/sqlite3.csv.gz" sh -c "sqlite3 -csv -header '$db' \"$litesql\" | gzip > '$work/sqlite3.csv.gz'"

echo
echo "== summary: $rows rows from PostgreSQL, $lrows from SQLite; $(nproc) cores, Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$results"
echo "$same"
[ -z "$OLD_MEMWHO" ] || printf '%s' "${oldsame:-old and new memwho wrote the same bytes in every case}"$'\n'
status=0
for n in pg-memwho-gzip pg-memwho-plain lite-memwho-gzip lite-memwho-plain; do
  if [ "${rss[$n]}" -gt "$RSS_LIMIT_KIB" ]; then
    echo "FAIL: $n peak RSS ${rss[$n]} KiB > $RSS_LIMIT_KIB KiB"
    status=1
  fi
done
case $same in MISMATCH*) status=1 ;; esac
[ -z "$oldsame" ] || status=1
exit $status
