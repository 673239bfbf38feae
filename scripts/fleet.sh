#!/usr/bin/env bash
# fleet.sh: the full-scale fleet runs of docs/fleet.md, outside CI (the
# scaled-down run is tools/fleetsim's tests). Each part starts what it
# needs on 127.0.0.1 in a temporary directory and removes it when done.
#
#   scripts/fleet.sh history      # 1,000 recorders' hour into PostgreSQL, time-compressed:
#                                 # ingest rate, bytes per host-day, leaks --all-hosts,
#                                 # the hour's export to SFTP next to psql \copy | gzip
#   scripts/fleet.sh realtime     # 1,000 recorders at their 60 s interval, the database's CPU
#   scripts/fleet.sh retention    # days of a smaller fleet with --keep 1d: what dropping days costs
#   scripts/fleet.sh prometheus   # 1,000 agents scraped every 15 s by Prometheus
#
# Knobs (environment): HOSTS (1000), PROCS (335: about 400 rows a sample,
# 24 million an hour), MINUTES (history: 60; realtime: 10; prometheus:
# 20), DAYS and RHOSTS (retention: 3 days of 50 hosts). Run it as root
# (PostgreSQL runs as the postgres user) under the shared lock:
#
#   flock /work/brief/heavy.lock scripts/fleet.sh history
set -euo pipefail
cd "$(dirname "$0")/.."

part=${1:-}
case $part in history | realtime | retention | prometheus) ;; *)
	echo "usage: scripts/fleet.sh history|realtime|retention|prometheus" >&2
	exit 2
	;;
esac
HOSTS=${HOSTS:-1000}
PROCS=${PROCS:-335}
[ "$(id -u)" = 0 ] || { echo "fleet.sh: run as root (PostgreSQL runs as the postgres user)" >&2; exit 1; }
for p in postgresql prometheus openssh-server openssh-sftp-server time; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		echo "fleet.sh: installing $p"
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
		rm -f /usr/sbin/policy-rc.d
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/memwho-fleet.XXXXXX")
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

say() { printf '== %s\n' "$*"; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

say "build"
CGO_ENABLED=0 go build -trimpath -o "$work/" ./cmd/memwho-agent ./tools/fleetsim
agent="$work/memwho-agent"
sim="$work/fleetsim"
echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"

# PostgreSQL as the fleet's database server would run: durable
# (fsync on), max_connections for 1,000 recorders that each keep a
# connection, shared_buffers a quarter of a 4 GiB server's memory.
start_postgres() {
	PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	mkdir "$work/pg" && chown postgres: "$work/pg"
	runuser -u postgres -- "$PGBIN/initdb" -D "$work/pg/data" -U memwho --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
	port=$(freeport)
	runuser -u postgres -- "$PGBIN/postgres" -D "$work/pg/data" -p "$port" -c listen_addresses=127.0.0.1 \
		-c unix_socket_directories="$work/pg" -c max_connections=1100 -c shared_buffers=1GB \
		-c max_wal_size=8GB -c checkpoint_timeout=15min >"$work/pg/log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		psql -h 127.0.0.1 -p "$port" -U memwho -d postgres -qAtc 'select 1' >/dev/null 2>&1 && break
		sleep 0.2
	done
	psql -h 127.0.0.1 -p "$port" -U memwho -d postgres -qc 'CREATE DATABASE fleet' >/dev/null
	url="postgres://memwho@127.0.0.1:$port/fleet?sslmode=disable"
	echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on port $port, fsync on, max_connections 1100"
}
psql_() { psql -h 127.0.0.1 -p "$port" -U memwho -d fleet -v ON_ERROR_STOP=1 -qAt "$@"; }

# timed NAME CMD...: runs CMD under /usr/bin/time -v, prints wall, CPU
# (user + system) and peak RSS.
timed() {
	local name=$1
	shift
	/usr/bin/time -v -o "$work/time.$name" "$@"
	awk -F': ' -v n="$name" '
		/Elapsed \(wall clock\)/ {k=split($2,a,":"); w=0; for(i=1;i<=k;i++) w=w*60+a[i]}
		/(User|System) time \(seconds\)/ {c += $2}
		/Maximum resident set size/ {r = $2}
		END {printf "%-28s %8.1f s wall %8.1f s CPU %8.1f MiB peak RSS\n", n, w, c, r/1024}' "$work/time.$name"
}

history() {
	local minutes=${MINUTES:-60}
	start_postgres
	say "record: $HOSTS hosts, $minutes minutes, time-compressed"
	"$sim" record --db "$url" --hosts "$HOSTS" --procs "$PROCS" --duration "${minutes}m" --start 2026-12-01T00:00:00Z \
		--keep 720h --dir "$work/sim" --db-cpu-user postgres --quiet
	# Sessions the server opened during the run (pg_stat_database, this
	# psql's own included): a recorder at an interval of 30 s or more
	# closes its connection a second after its write, so time-compressed
	# it mostly opens one per sample, as a fleet that large would.
	psql_ -c "SELECT 'connections opened: ' || sessions FROM pg_stat_database WHERE datname = 'fleet'"
	psql_ -c 'VACUUM ANALYZE samples' >/dev/null
	local bytes rows samples
	bytes=$(psql_ -c "SELECT pg_database_size('fleet')")
	read -r samples rows < <(psql_ -F' ' -c 'SELECT count(*), sum(nrows) FROM samples')
	say "size"
	psql_ -F' ' -c "SELECT 'table samples (heap, TOAST, indexes)', pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'samples'::regclass"
	awk -v b="$bytes" -v r="$rows" -v s="$samples" -v h="$HOSTS" -v m="$minutes" 'BEGIN {
		printf "database %.1f MB for %d samples, %d rows: %.1f bytes per row, %.0f bytes per sample\n", b/1e6, s, r, b/r, b/s
		perday = b / h * (1440 / m)
		printf "per host-day (1,440 samples): %.1f MB; 30 days of 1,000 hosts: %.0f GB; of 10,000 hosts: %.1f TB\n", perday/1e6, perday*1000*30/1e9, perday*10000*30/1e12 }'

	say "leaks --all-hosts --window 1h"
	local until="2026-12-01T01:00:00Z"
	timed leaks sh -c "'$agent' leaks --db '$url' --all-hosts --window 1h --until '$until' --top 10 --kind process,program > '$work/leaks.txt'"
	head -16 "$work/leaks.txt"
	echo "planted (fleetsim leaks), fastest first:"
	"$sim" leaks --hosts "$HOSTS" --procs "$PROCS" --start 2026-12-01T00:00:00Z >"$work/planted.txt"
	head -5 "$work/planted.txt"

	say "export --since 1h: $rows rows to SFTP, next to psql \\copy | gzip"
	echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
	mkdir -p "$work/ssh/upload" && chmod 700 "$work/ssh"
	ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/host" && ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/id"
	cp "$work/ssh/id.pub" "$work/ssh/authorized_keys"
	local sport
	sport=$(freeport)
	cat >"$work/ssh/sshd_config" <<-EOF
		ListenAddress 127.0.0.1:$sport
		HostKey $work/ssh/host
		PidFile $work/ssh/sshd.pid
		AuthorizedKeysFile $work/ssh/authorized_keys
		AllowUsers root
		PermitRootLogin prohibit-password
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		StrictModes no
		UsePAM no
		Subsystem sftp internal-sftp
	EOF
	/usr/sbin/sshd -D -e -f "$work/ssh/sshd_config" 2>"$work/ssh/log" &
	pids+=($!)
	sleep 1
	echo "[127.0.0.1]:$sport $(cut -d' ' -f1-2 "$work/ssh/host.pub")" >"$work/ssh/known_hosts"
	local up=(--identity "$work/ssh/id" --known-hosts "$work/ssh/known_hosts")
	local q=(--db "$url" --since 2026-12-01T00:00:00Z --until "$until" --gzip)
	# Warm the server's cache once; each run then reads the same way.
	"$agent" export "${q[@]}" -o "$work/warm.csv.gz" && rm -f "$work/warm.csv.gz"
	printf '\\copy (%s) to stdout with (format csv, header)\n' "$(exportsql)" >"$work/copy.sql"
	for round in 1 2; do
		timed "memwho export --upload #$round" "$agent" export "${q[@]}" "${up[@]}" --upload "sftp://root@127.0.0.1:$sport$work/ssh/upload/hour$round.csv.gz"
		timed "psql \\copy | gzip #$round" sh -c "psql -h 127.0.0.1 -p $port -U memwho -d fleet -q -f $work/copy.sql | gzip > $work/psql$round.csv.gz"
	done
	md5sum "$work/ssh/upload/hour1.csv.gz" "$work/ssh/upload/hour2.csv.gz" "$work/psql1.csv.gz" | sed "s|$work/||"
	if cmp -s "$work/ssh/upload/hour1.csv.gz" "$work/ssh/upload/hour2.csv.gz"; then echo "memwho's two exports: byte-identical"; else echo "MISMATCH between memwho's two exports"; fi
	ls -l "$work/ssh/upload/hour1.csv.gz" "$work/psql1.csv.gz" | awk '{printf "%s %.1f MB\n", $NF, $5/1e6}' | sed "s|$work/||"
	local lines chars
	read -r lines chars < <(gzip -dc "$work/ssh/upload/hour1.csv.gz" | wc -lc)
	echo "CSV: $lines lines (header included), $chars bytes uncompressed"
	# psql's CSV differs from memwho's only where memwho neutralises text
	# cells (the hostile simulated names): count the lines that differ.
	paste -d $'\x1f' <(gzip -dc "$work/ssh/upload/hour1.csv.gz") <(gzip -dc "$work/psql1.csv.gz") |
		awk -F'\037' '$1 != $2 {n++} END {printf "lines that differ from psql'"'"'s: %d of %d\n", n, NR}'
}

# exportsql prints the SELECT memwho's PostgreSQL export runs (without
# the neutralisation of text cells, which memwho does on its side: the
# simulated names that need it are few, so psql's output differs only
# there).
exportsql() {
	cat <<-'EOF'
		SELECT to_char(timestamp 'epoch' + s.ts * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time, s.host, (ARRAY['process','program','user','cgroup','unit','slice','container'])[u.kind + 1] AS kind, u.key, u.pid, u.start_time, u.count, u.pss, u.private, u.shared, u.swap, u.estimated, u.mem_limit, u.mem_limit_free FROM samples s CROSS JOIN LATERAL unnest(s.kind, s.key, s.pid, s.start_time, s.count, s.pss, s.private, s.shared, s.swap, s.estimated, s.mem_limit, s.mem_limit_free) WITH ORDINALITY AS u(kind, key, pid, start_time, count, pss, private, shared, swap, estimated, mem_limit, mem_limit_free, seq) WHERE s.ts >= 1796083200000 AND s.ts < 1796086800000 ORDER BY s.ts, s.host COLLATE "C", s.id, u.seq
	EOF
}

realtime() {
	local minutes=${MINUTES:-10}
	start_postgres
	say "record: $HOSTS recorders at 60 s, $minutes minutes of real time"
	"$sim" record --db "$url" --hosts "$HOSTS" --procs "$PROCS" --duration "${minutes}m" --realtime \
		--keep 720h --dir "$work/sim" --db-cpu-user postgres --quiet &
	local sim_pid=$!
	# Every 5 s: the server's processes and its client connections (this
	# psql's own not counted).
	(
		while kill -0 "$sim_pid" 2>/dev/null; do
			printf '%s %s\n' "$(pgrep -c -u postgres)" \
				"$(psql_ -c "SELECT count(*) - 1 FROM pg_stat_activity WHERE backend_type = 'client backend'" 2>/dev/null || echo 0)"
			sleep 5
		done >"$work/conns"
	) &
	local mon_pid=$!
	sleep $((minutes * 30))
	# Halfway: what 1,000 recorders' connections cost the server.
	ps -o rss= -u postgres | awk '{r += $1} END {printf "halfway: %d PostgreSQL processes, RSS summed %.0f MiB\n", NR, r/1024}' || true
	cat $(for p in $(pgrep -u postgres); do echo "/proc/$p/smaps_rollup"; done) 2>/dev/null |
		awk '/^Pss:/ {s += $2} END {printf "halfway: PostgreSQL PSS summed %.0f MiB (shared memory counted once)\n", s/1024}' || true
	wait "$sim_pid"
	wait "$mon_pid" || true
	awk 'NR > 2 {n++; p += $1; c += $2; if ($1 > mp) mp = $1; if ($2 > mc) mc = $2}
		END {printf "every 5 s (%d looks): PostgreSQL processes mean %.1f, at most %d; client connections mean %.1f, at most %d\n", n, p/n, mp, c/n, mc}' "$work/conns"
}

retention() {
	local days=${DAYS:-3} hosts=${RHOSTS:-50}
	start_postgres
	say "record: $hosts hosts, $days days, --keep 24h, time-compressed"
	"$sim" record --db "$url" --hosts "$hosts" --procs "$PROCS" --duration "$((days * 24))h" --start 2026-12-01T00:00:00Z \
		--keep 24h --dir "$work/sim" --db-cpu-user postgres --quiet
	psql_ -c "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'samples'::regclass ORDER BY 1" | tr '\n' ' '
	echo
	psql_ -F' ' -c "SELECT 'samples kept', count(*), to_timestamp(min(ts)/1000.0) AT TIME ZONE 'UTC', to_timestamp(max(ts)/1000.0) AT TIME ZONE 'UTC' FROM samples"
	# What a drop is made of, by hand on the oldest day left: the count
	# of the samples it held (a scan of the day), then the DROP itself.
	local oldest
	oldest=$(psql_ -c "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'samples'::regclass ORDER BY 1 LIMIT 1")
	psql_ -F' ' -c "SELECT '$oldest:', pg_size_pretty(pg_total_relation_size('$oldest')), 'in all,', pg_size_pretty(pg_relation_size('$oldest')), 'heap'"
	psql_ -c '\timing on' -c "SELECT count(*) FROM $oldest" -c "DROP TABLE $oldest" | sed "s/^/by hand: /"
}

prometheus() {
	local minutes=${MINUTES:-20}
	say "fleetsim serve: $HOSTS agents; Prometheus scraping every 15 s for $minutes minutes"
	local aport pport
	aport=$(freeport)
	"$sim" serve --hosts "$HOSTS" --procs "$PROCS" --listen "127.0.0.1:$aport" --sd-file "$work/targets.json" --quiet >"$work/serve.out" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$work/targets.json" ] && break; sleep 0.2; done
	cat >"$work/prometheus.yml" <<-EOF
		global:
		  scrape_interval: 15s
		  scrape_timeout: 10s
		  evaluation_interval: 1m
		rule_files: ['$PWD/contrib/memwho-rules.yml']
		scrape_configs:
		  - job_name: memwho
		    file_sd_configs:
		      - files: ['$work/targets.json']
		  - job_name: prometheus
		    static_configs:
		      - targets: ['127.0.0.1:PPORT']
	EOF
	pport=$(freeport)
	sed -i "s/PPORT/$pport/" "$work/prometheus.yml"
	/usr/bin/prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
		--web.listen-address="127.0.0.1:$pport" >"$work/prom.log" 2>&1 &
	local ppid=$!
	pids+=($ppid)
	local cpu0
	cpu0=$(awk '{print $14+$15}' "/proc/$ppid/stat")
	sleep $((minutes * 60))
	local cpu1
	cpu1=$(awk '{print $14+$15}' "/proc/$ppid/stat")
	q() { curl -s "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(" ".join(x["value"][1] for x in r) or "none")'; }
	say "after $minutes minutes"
	echo "targets up:                          $(q 'count(up{job="memwho"} == 1)') of $HOSTS"
	echo "samples per scrape (series per host): mean $(q 'avg(scrape_samples_scraped{job="memwho"})'), min $(q 'min(scrape_samples_scraped{job="memwho"})'), max $(q 'max(scrape_samples_scraped{job="memwho"})')"
	echo "scrape duration, s:                  mean $(q 'avg(avg_over_time(scrape_duration_seconds{job="memwho"}[5m]))'), max $(q 'max(max_over_time(scrape_duration_seconds{job="memwho"}[5m]))')"
	echo "head series:                         $(q 'prometheus_tsdb_head_series')"
	echo "series created per minute (churn):   $(q 'rate(prometheus_tsdb_head_series_created_total[10m]) * 60')"
	echo "Prometheus RSS, bytes:               $(q 'process_resident_memory_bytes{job="prometheus"}')"
	echo "Go heap in use, bytes:               $(q 'go_memstats_heap_inuse_bytes{job="prometheus"}')"
	echo "Prometheus CPU over the run, cores:  $(awk -v a="$cpu0" -v b="$cpu1" -v m="$minutes" 'BEGIN {printf "%.2f", (b-a)/100/(m*60)}')"
	echo "rule groups, last evaluation, s:     $(q 'prometheus_rule_group_last_duration_seconds')"
	echo "fastest-growing programs (1 h):      $(q 'topk(3, memwho:fleet_group_growth_bytes_per_second:sum) * 3600')"
	echo "hosts full within 24 h (firing):     $(q 'count(ALERTS{alertname="MemwhoHostMemoryFullIn24h",alertstate="firing"}) or vector(0)')"
	du -sh "$work/prom" | awk '{print "TSDB on disk: " $1}'
}

"$part"
