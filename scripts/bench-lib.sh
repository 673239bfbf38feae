# bench-lib.sh: what the bench scripts share. Source it after setting TMP
# (a scratch directory the caller removes); it defines:
#
#   log MSG...            a progress line on stderr
#   stop PID              SIGTERM, up to 10 s to exit, then SIGKILL; reaps
#   start_load BIN N ...  runs memwho-load BIN with N processes and the
#                         further flags, sets LOAD_PID and waits until it
#                         is ready; its output goes to $TMP/load.out and
#                         $TMP/load.err.
# shellcheck shell=bash

log() { printf '%s\n' "$*" >&2; }

stop() {
	local pid=$1
	[[ -n $pid ]] || return 0
	# SIGTERM makes memwho-load kill and reap its children; SIGKILL as a
	# last resort still takes them down (parent-death signal).
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

start_load() {
	local bin=$1 n=$2
	shift 2
	# The last load's "ready" must not pass for this one's: the
	# redirection below truncates only once the child runs.
	rm -f "$TMP/load.out" "$TMP/load.err"
	"$bin" -n "$n" "$@" >"$TMP/load.out" 2>"$TMP/load.err" &
	LOAD_PID=$!
	until grep -q '^ready' "$TMP/load.out" 2>/dev/null; do
		if ! kill -0 "$LOAD_PID" 2>/dev/null; then
			log "memwho-load failed:"
			cat "$TMP/load.err" >&2
			exit 1
		fi
		sleep 0.2
	done
}
