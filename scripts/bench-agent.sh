#!/usr/bin/env bash
# bench-agent.sh measures the sampling engine and the agent (memwho serve)
# by hand; CI runs short versions of the same tests. Not for CI: it starts
# a thousand processes and takes several minutes. Run it as root (or the
# engine reads estimates and the figures mean little).
#
# Sections (SECTIONS="engine sockdiag load overhead" runs all):
#   engine    TestPSSErrorBound with 1000 processes, 10% of them changing
#             their sharing every tick, FullEvery at its default: tick cost
#             against a full walk (CPU time, same run) and the PSS error.
#   sockdiag  listing 10,000 ESTABLISHED sockets: sock_diag, the
#             fixed-width /proc/net/tcp parser and a strings.Fields reader;
#             and mapping them to a process through /proc/PID/fd.
#   load      TestLoad for 30 s: 200 scrapes/s on loopback; walks per
#             min-interval and VmRSS before/after.
#   overhead  memwho serve with N=1000 load processes (memwho-load), scraped
#             every INTERVAL for DURATION by curl: the agent's average CPU
#             (utime+stime from /proc/PID/stat) and its RSS.
#
# Environment: SECTIONS, N=1000, INTERVAL=15, DURATION=300 (seconds),
# PRIVATE=1MiB FILE_SHARED=4MiB (per load process / one shared file),
# SERVE_FLAGS (extra flags for memwho serve).
set -euo pipefail

SECTIONS=${SECTIONS:-"engine sockdiag load overhead"}
N=${N:-1000}
INTERVAL=${INTERVAL:-15}
DURATION=${DURATION:-300}
PRIVATE=${PRIVATE:-1MiB}
FILE_SHARED=${FILE_SHARED:-4MiB}
SERVE_FLAGS=${SERVE_FLAGS:-}

cd "$(dirname "$0")/.."
export CGO_ENABLED=0
TMP=$(mktemp -d /tmp/memwho-bench-agent.XXXXXX)
LOAD_PID= AGENT_PID=

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

cleanup() {
	stop "$AGENT_PID"
	stop "$LOAD_PID"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

[[ $(id -u) -eq 0 ]] || log "warning: not root: figures of other users' processes are estimates"

section() { [[ " $SECTIONS " == *" $1 "* ]]; }

if section engine; then
	log "== engine: 1000 processes, 10% changing per tick"
	MEMWHO_ENGINE_BENCH=1 go test -count=1 -timeout 60m -run 'TestPSSErrorBound$' -v ./internal/engine |
		grep -E 'pss_test|^(ok|FAIL|---)'
fi

if section sockdiag; then
	log "== sockdiag: 10,000 sockets"
	go test -count=1 -run XXX -bench . -benchmem -benchtime 3s ./internal/sockdiag | grep -E '^Benchmark|^ok'
fi

if section load; then
	log "== load: 200 scrapes/s for 30 s"
	MEMWHO_LOAD_SECONDS=30 go test -count=1 -run 'TestLoad$' -v ./internal/agent | grep -E 'prometheus_test|^(ok|FAIL|---)'
fi

# ticks prints utime+stime of pid, in clock ticks (1/100 s).
ticks() {
	local stat
	stat=$(cat "/proc/$1/stat")
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	echo $(( ${12} + ${13} ))
}

kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

if section overhead; then
	log "== overhead: memwho serve, $N processes, a scrape every ${INTERVAL}s for ${DURATION}s"
	go build -trimpath -o "$TMP/memwho" ./cmd/memwho
	go build -trimpath -o "$TMP/memwho-load" ./cmd/memwho-load
	start_load "$TMP/memwho-load" "$N" -private "$PRIVATE" -file-shared "$FILE_SHARED" -dir "$TMP"
	port=$(( 20000 + RANDOM % 20000 ))
	# shellcheck disable=SC2086
	"$TMP/memwho" serve --listen "127.0.0.1:$port" --no-auth $SERVE_FLAGS 2>"$TMP/agent.err" &
	AGENT_PID=$!
	url="http://127.0.0.1:$port/metrics"
	for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.2; done
	# The first walk reads every process in full: measured apart.
	curl -sf -o "$TMP/first.prom" "$url"
	first_walk=$(awk '$1 == "memwho_last_walk_duration_seconds" { print $2 }' "$TMP/first.prom")
	procs=$(awk '$1 == "memwho_processes" { print $2 }' "$TMP/first.prom")
	t0=$(ticks "$AGENT_PID")
	s0=$(date +%s.%N)
	scrapes=0
	end=$(( $(date +%s) + DURATION ))
	while (( $(date +%s) < end )); do
		sleep "$INTERVAL"
		curl -sf -o "$TMP/last.prom" "$url"
		scrapes=$(( scrapes + 1 ))
	done
	t1=$(ticks "$AGENT_PID")
	s1=$(date +%s.%N)
	rss=$(kb "$AGENT_PID" VmRSS) hwm=$(kb "$AGENT_PID" VmHWM)
	anon=$(kb "$AGENT_PID" RssAnon) file=$(kb "$AGENT_PID" RssFile)
	walks=$(awk '$1 == "memwho_walk_duration_seconds_count" { print $2 }' "$TMP/last.prom")
	walk_sum=$(awk '$1 == "memwho_walk_duration_seconds_sum" { print $2 }' "$TMP/last.prom")
	cpu=$(awk -v t=$(( t1 - t0 )) -v s="$s0" -v e="$s1" 'BEGIN { printf "%.3f", 100 * (t / 100) / (e - s) }')
	echo
	echo "| memwho serve, $procs processes, scrape every ${INTERVAL}s, $(awk -v s="$s0" -v e="$s1" 'BEGIN { printf "%.0f", e - s }') s | value |"
	echo "| --- | ---: |"
	echo "| first walk (every process read in full) | ${first_walk} s |"
	echo "| later walks | $(( walks - 1 )) walks, $(awk -v w="$walk_sum" -v f="$first_walk" -v n=$(( walks - 1 )) 'BEGIN { if (n > 0) printf "%.1f ms", 1000 * (w - f) / n; else print "-" }') each on average |"
	echo "| CPU, utime+stime over the window | $(( t1 - t0 )) ticks = ${cpu}% of one core |"
	echo "| VmRSS at the end / peak (VmHWM) | $(( rss / 1024 )) MiB / $(( hwm / 1024 )) MiB |"
	echo "| of which RssAnon / RssFile | $(( anon / 1024 )) MiB / $(( file / 1024 )) MiB |"
	echo "| scrapes | $(( scrapes + 1 )) |"
fi
