#!/usr/bin/env bash
# bench.sh compares memwho's wall time, CPU time and peak RSS with the floor
# reader (tools/floor: bare reads of every /proc/PID/smaps_rollup; with
# -names also comm and the exe link, which naming programs needs; with
# -status every status, the floor of --fast; with -snapshot status, cgroup
# and the exe link, the floor of memwho snapshot; with -names -held the
# names' reads through one descriptor of each /proc/PID directory, the way
# memwho reads so that a reused PID cannot mix two processes; with -report
# also Pss and SwapPss parsed, grouped by comm and printed, the least a Go
# report costs) while memwho-load keeps N
# processes alive. A last row per size times memwho --version against the
# floor reading one /proc file (memwho-floor -startup): the fixed cost of
# starting each binary. A last measurement starts the agent (memwho-agent
# serve, its defaults) and times memwho answering from its snapshot socket.
# Not for CI: it starts thousands of processes and takes minutes. Run it as
# root, or memwho falls back to estimates and compares with nothing useful.
#
# Prints Markdown tables to stdout; progress goes to stderr. The last
# table is the binaries': size, the sections a run maps, the packages
# linked and any of them that must never hold capabilities (issue 13's
# goal 1).
#
# Environment:
#   SIZES="100 1000 3000"   numbers of load processes
#   ROUNDS=3 RUNS=10        timing rounds, runs per command per round
#   PRIVATE=2MiB FILE_SHARED=4MiB   memory per load process / shared file
#   WORKERS=2*nproc         goroutines of the floors (memwho's
#                           scan uses 2 x GOMAXPROCS, i.e. the same)
#   OUT=dir                 where to build the binaries (default: a temp dir)
#   NO_HYPERFINE=1          time with the bash loop even if hyperfine exists
#   MEMWHO_BIN=path         measure this memwho binary instead of building
#                           ./cmd/memwho (a report-only build, say)
#   BASELINE_BIN=path       also measure this memwho (older code) in the
#                           same interleaved rounds: rows marked "baseline"
#   PAIRS=100               pairs per comparison of the paired table; 0
#                           skips it
#
# A second table times pairs of runs back to back (tools/pair: the
# median of the per-pair ratios, which drift between rounds cannot move)
# for three comparisons at each size: memwho against floor -names -held;
# the floor's own code run inside memwho's binary (cmd/memwho built with
# -tags floorpad, MEMWHO_FLOOR_PAD=1) against the floor, which is what the
# size of memwho's binary alone costs; and memwho against that, which is
# what memwho's work over the floor's costs. A fourth pairs floor -report
# with its own code inside memwho's binary: how much of memwho's peak RSS
# the binary brings with it.
#
# The last column is the RAM memwho's own report gives itself (--by pid
# --json, PSS in MiB, read while it scans): what a user sees it cost; in
# brackets its anonymous part (pss_anon_bytes), which goal 3 of issue 13
# wants under 3.2 MiB (the rest is the binary's own mapped pages).
#
# Timing uses hyperfine (apt-get install -y hyperfine) when it and jq are
# installed, else a bash loop; either way the commands alternate, round by
# round. Peak RSS comes from /usr/bin/time (apt-get install -y time).
set -euo pipefail

SIZES=${SIZES:-"100 1000 3000"}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-10}
PRIVATE=${PRIVATE:-2MiB}
FILE_SHARED=${FILE_SHARED:-4MiB}
WORKERS=${WORKERS:-$((2 * $(nproc)))}
PAIRS=${PAIRS:-100}

cd "$(dirname "$0")/.."
TMP=$(mktemp -d /tmp/memwho-bench.XXXXXX)
OUT=${OUT:-$TMP}
LOAD_PID=

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

stop_load() {
	stop "$LOAD_PID"
	LOAD_PID=
}

cleanup() {
	stop_load
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

[[ $(id -u) -eq 0 ]] || log "warning: not root: memwho will report estimates"

log "building into $OUT"
if [[ -n ${MEMWHO_BIN:-} ]]; then
	MEMWHO=$(realpath "$MEMWHO_BIN")
else
	CGO_ENABLED=0 go build -trimpath -o "$OUT/" ./cmd/memwho ./cmd/memwho-agent
	MEMWHO=$OUT/memwho
fi
BASELINE=
[[ -z ${BASELINE_BIN:-} ]] || BASELINE=$(realpath "$BASELINE_BIN")
CGO_ENABLED=0 go build -trimpath -o "$OUT/memwho-floor" ./tools/floor
CGO_ENABLED=0 go build -o "$OUT/memwho-load" ./tools/load
FLOOR=$OUT/memwho-floor
if ((PAIRS > 0)); then
	CGO_ENABLED=0 go build -trimpath -tags floorpad -o "$OUT/memwho-padded" ./cmd/memwho
	CGO_ENABLED=0 go build -o "$OUT/memwho-pair" ./tools/pair
fi
PADDED=$OUT/memwho-padded
# Each binary is copied over itself, as a package install writes it: the
# page cache of a file the Go linker wrote (through a shared mapping) is
# in small folios, and mapping it costs more. On 2026-11-26 a copy of
# memwho started 0.90x as long as the file go build wrote, and a copy of
# memwho-floor 0.93x (tools/pair, 400 pairs each).
for bin in "$OUT"/memwho "$OUT"/memwho-agent "$OUT"/memwho-floor "$PADDED"; do
	[[ -f $bin ]] || continue
	cp "$bin" "$bin.copy"
	mv "$bin.copy" "$bin"
done

TIME=
if [[ -x /usr/bin/time ]]; then
	TIME=/usr/bin/time
else
	log "warning: /usr/bin/time missing (apt-get install -y time): no peak RSS"
fi
HYPERFINE=
if [[ -z ${NO_HYPERFINE:-} ]] && command -v hyperfine >/dev/null && command -v jq >/dev/null; then
	HYPERFINE=hyperfine
else
	log "note: timing with a bash loop (hyperfine and jq give better numbers: apt-get install -y hyperfine jq)"
fi

run_load() {
	local n=$1
	log "starting $n load processes ($PRIVATE private, one $FILE_SHARED shared file)"
	start_load "$OUT/memwho-load" "$n" -private "$PRIVATE" -file-shared "$FILE_SHARED"
	log "$(cat "$TMP/load.err")"
}

# times_ms NAME CMD...: appends each run's wall time in ms to $TMP/NAME.
# The loop fallback; hyperfine's own numbers are used when it exists.
times_ms() {
	local name=$1
	shift
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$TMP/$name"
}

# The commands compared, as name=command line. The floors run with as many
# goroutines as memwho's scan (GOMAXPROCS): what they measure is the kernel's
# share of the same work.
# --fresh: memwho walks /proc even if an agent answers on this host.
COMMANDS=(
	"memwho=$MEMWHO --fresh"
	"floor=$FLOOR -parallel $WORKERS"
	"floor_names=$FLOOR -names -parallel $WORKERS"
	"floor_held=$FLOOR -names -held -parallel $WORKERS"
	"floor_report=$FLOOR -report -parallel $WORKERS"
	"memwho_fast=$MEMWHO --fresh --fast"
	"floor_status=$FLOOR -status -parallel $WORKERS"
	"memwho_snapshot=$MEMWHO snapshot --fresh -o $TMP/bench.mwsnap"
	"floor_snapshot=$FLOOR -snapshot -parallel $WORKERS"
	"startup=$MEMWHO --version"
	"floor_startup=$FLOOR -startup"
)
if [[ -n $BASELINE ]]; then
	COMMANDS+=(
		"baseline=$BASELINE"
		"baseline_fast=$BASELINE --fast"
		"baseline_startup=$BASELINE --version"
	)
fi

# measure: ROUNDS rounds of RUNS alternating runs of every command. Wall
# times go to $TMP/t_NAME, one per run, and CPU (user + system, ms) to
# $TMP/c_NAME, one mean per round with hyperfine or one per run without.
measure() {
	rm -f "$TMP"/t_* "$TMP"/c_*
	for round in $(seq "$ROUNDS"); do
		log "  round $round/$ROUNDS"
		if [[ -n $HYPERFINE ]]; then
			local args=()
			for c in "${COMMANDS[@]}"; do
				args+=(-n "${c%%=*}" "${c#*=}")
			done
			hyperfine -N --style none --warmup 2 --runs "$RUNS" \
				--export-json "$TMP/h.json" "${args[@]}" >/dev/null 2>&1
			jq -r '.results[] | .command as $c | .times[] | "\($c) \(. * 1000)"' "$TMP/h.json" |
				while read -r name ms; do echo "$ms" >>"$TMP/t_$name"; done
			jq -r '.results[] | "\(.command) \((.user + .system) * 1000)"' "$TMP/h.json" |
				while read -r name ms; do echo "$ms" >>"$TMP/c_$name"; done
		else
			for _ in $(seq "$RUNS"); do
				for c in "${COMMANDS[@]}"; do
					# shellcheck disable=SC2086 # the command line is split on purpose
					times_ms "t_${c%%=*}" ${c#*=}
					if [[ -n $TIME ]]; then
						# shellcheck disable=SC2086
						"$TIME" -f '%U %S' -o "$TMP/cpu.one" ${c#*=} >/dev/null 2>&1 || true
						awk '{ printf "%.1f\n", ($1 + $2) * 1000 }' "$TMP/cpu.one" >>"$TMP/c_${c%%=*}"
					fi
				done
			done
		fi
	done
}

mean() { awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print "n/a" }' "$TMP/$1" 2>/dev/null || echo n/a; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# peak_rss_mib CMD...: the largest maximum RSS over three runs, in MiB.
peak_rss_mib() {
	[[ -n $TIME ]] || { echo n/a; return; }
	local kb max=0
	for _ in 1 2 3; do
		kb=$("$TIME" -f '%M' "$@" 2>&1 >/dev/null | tail -1)
		((kb > max)) && max=$kb
	done
	awk -v k="$max" 'BEGIN { printf "%.1f", k / 1024 }'
}

# self_mib BINARY [ARGS...]: the RAM (PSS, MiB) the binary's report gives
# its own process, by pid, and in brackets the anonymous part of it.
self_mib() {
	command -v jq >/dev/null || { echo n/a; return; }
	local name
	name=$(basename "$1")
	"$@" --by pid --json 2>/dev/null |
		jq -r --arg n "$name" 'def mib: . / 104857.6 | round / 10 | tostring | if test("[.]") then . else . + ".0" end;
			[.groups[] | select(.key | startswith($n + " ["))] | first // empty | "\(.ram_bytes | mib) (\(.pss_anon_bytes | mib))"' ||
		echo n/a
}

# row MODE NAME FLOOR RSS FLOOR_RSS [SELF]: one table row from the means.
row() {
	local m f cm cf
	m=$(mean "t_$2") f=$(mean "t_$3") cm=$(mean "c_$2") cf=$(mean "c_$3")
	ROWS+=("| $total | $1 | $3 | $m | $f | $(ratio "$m" "$f") | $cm | $cf | $(ratio "$cm" "$cf") | $4 | $5 | ${6:-} |")
}

# agent_row starts memwho-agent serve (its defaults; sockets in $TMP/run)
# beside the load, waits for its first snapshot, and times memwho answering
# from it against the start-up floor.
agent_row() {
	local agent
	agent=$(dirname "$MEMWHO")/memwho-agent
	[[ -x $agent ]] || { log "no memwho-agent beside $MEMWHO: no agent row"; return; }
	mkdir -p "$TMP/run"
	"$agent" serve --socket "$TMP/run/m.sock" 2>"$TMP/agent.err" &
	local apid=$! sock=$TMP/run/snapshot.sock
	for _ in $(seq 600); do
		"$MEMWHO" --agent-socket "$sock" -t 2>&1 >/dev/null | grep -q "figures from memwho-agent" && break
		sleep 0.1
	done
	log "  answers from the agent's snapshot"
	local saved=("${COMMANDS[@]}")
	COMMANDS=("from_agent=$MEMWHO --agent-socket $sock --max-age 3600" "floor_startup=$FLOOR -startup")
	measure
	COMMANDS=("${saved[@]}")
	row "from agent" from_agent floor_startup "$(peak_rss_mib "$MEMWHO" --agent-socket "$sock" --max-age 3600)" "$(peak_rss_mib $FLOOR -startup)"
	stop "$apid"
}

# pair_row LABEL_A LABEL_B RSS_A RSS_B -- A... -- B...: one row of the
# paired table. MEMWHO_FLOOR_PAD is set for every run: only the floorpad
# build reads it, as the floor; memwho and memwho-floor ignore it.
pair_row() {
	local la=$1 lb=$2 ra=$3 rb=$4 out
	shift 4
	log "  pairs: $la against $lb"
	out=$(MEMWHO_FLOOR_PAD=1 "$OUT/memwho-pair" -n "$PAIRS" "$@")
	local -A f
	local kv
	for kv in $out; do f[${kv%%=*}]=${kv#*=}; done
	PAIR_ROWS+=("| $total | $la | $lb | ${f[pairs]} | ${f[a_ms]} | ${f[b_ms]} | ${f[ratio]} (${f[q25]}–${f[q75]}) | ${f[cpu_ratio]} (${f[cpu_q25]}–${f[cpu_q75]}) | $ra | $rb |")
}

# pairs: the paired table's three comparisons at this size.
pairs() {
	((PAIRS > 0)) || return 0
	local held=(-names -held -parallel "$WORKERS")
	local rss_pad
	rss_pad=$(MEMWHO_FLOOR_PAD=1 peak_rss_mib "$PADDED" "${held[@]}")
	pair_row memwho floor_held "$rss_full" "$rss_held" -- "$MEMWHO" --fresh -- "$FLOOR" "${held[@]}"
	# With each process's statm read first: the size check by which a
	# report reads a large process page by page (docs/accuracy.md).
	pair_row memwho floor_held_statm "$rss_full" "$rss_held" -- "$MEMWHO" --fresh -- "$FLOOR" "${held[@]}" -statm
	pair_row "floor in memwho's binary" floor_held "$rss_pad" "$rss_held" -- "$PADDED" "${held[@]}" -- "$FLOOR" "${held[@]}"
	pair_row memwho "floor in memwho's binary" "$rss_full" "$rss_pad" -- "$MEMWHO" --fresh -- "$PADDED" "${held[@]}"
	rss_pad=$(MEMWHO_FLOOR_PAD=1 peak_rss_mib "$PADDED" -report -parallel "$WORKERS")
	pair_row "floor_report in memwho's binary" floor_report "$rss_pad" "$rss_report" -- "$PADDED" -report -parallel "$WORKERS" -- "$FLOOR" -report -parallel "$WORKERS"
}

ROWS=()
PAIR_ROWS=()
for n in $SIZES; do
	run_load "$n"
	# Sanity: memwho must see the load, or the numbers mean nothing.
	if command -v jq >/dev/null; then
		seen=$("$MEMWHO" --json 2>/dev/null | jq '[.groups[] | select(.key == "memwho-load") | .count] | add // 0')
		((seen > n)) || log "warning: memwho counted $seen memwho-load processes, expected $((n + 1))"
	fi
	# A glob, not ls: a process that exits between the expansion and
	# ls's stat would fail the script (set -e, pipefail).
	procs=(/proc/[0-9]*)
	total=${#procs[@]}
	log "timing with $total processes on the host"
	measure
	rss_full=$(peak_rss_mib "$MEMWHO" --fresh)
	rss_fast=$(peak_rss_mib "$MEMWHO" --fresh --fast)
	rss_floor=$(peak_rss_mib $FLOOR -parallel "$WORKERS")
	rss_names=$(peak_rss_mib $FLOOR -names -parallel "$WORKERS")
	rss_held=$(peak_rss_mib $FLOOR -names -held -parallel "$WORKERS")
	rss_report=$(peak_rss_mib $FLOOR -report -parallel "$WORKERS")
	rss_status=$(peak_rss_mib $FLOOR -status -parallel "$WORKERS")
	rss_snap=$(peak_rss_mib "$MEMWHO" snapshot --fresh -o "$TMP/bench.mwsnap")
	rss_fsnap=$(peak_rss_mib $FLOOR -snapshot -parallel "$WORKERS")
	self_full=$(self_mib "$MEMWHO" --fresh)
	self_fast=$(self_mib "$MEMWHO" --fresh --fast)
	row full memwho floor "$rss_full" "$rss_floor" "$self_full"
	row full memwho floor_names "$rss_full" "$rss_names" "$self_full"
	row full memwho floor_held "$rss_full" "$rss_held" "$self_full"
	row full memwho floor_report "$rss_full" "$rss_report" "$self_full"
	row --fast memwho_fast floor_status "$rss_fast" "$rss_status" "$self_fast"
	row snapshot memwho_snapshot floor_snapshot "$rss_snap" "$rss_fsnap"
	row "snapshot vs report" memwho_snapshot memwho "$rss_snap" "$rss_full"
	row "--version" startup floor_startup "$(peak_rss_mib "$MEMWHO" --version)" "$(peak_rss_mib $FLOOR -startup)"
	if [[ -n $BASELINE ]]; then
		rss_full=$(peak_rss_mib "$BASELINE")
		rss_fast=$(peak_rss_mib "$BASELINE" --fast)
		self_full=$(self_mib "$BASELINE")
		self_fast=$(self_mib "$BASELINE" --fast)
		row "full, baseline" baseline floor_names "$rss_full" "$rss_names" "$self_full"
		row "--fast, baseline" baseline_fast floor_status "$rss_fast" "$rss_status" "$self_fast"
		row "--version, baseline" baseline_startup floor_startup "" ""
	fi
	pairs
	agent_row
	stop_load
done

echo "memwho vs floor, mean over $ROUNDS rounds x $RUNS alternating runs ($(nproc) CPUs, $(uname -r), load: $PRIVATE private + $FILE_SHARED shared file per process; every floor runs $WORKERS goroutines, as memwho does)"
echo
echo "| processes | memwho | floor | memwho ms | floor ms | wall ratio | memwho CPU ms | floor CPU ms | CPU ratio | memwho peak RSS MiB | floor peak RSS MiB | memwho's RAM (anonymous) in its own report MiB |"
echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
if ((${#PAIR_ROWS[@]} > 0)); then
	echo
	echo "paired runs: the median over $PAIRS pairs of A's time over B's, each pair run back to back (quartiles in brackets; tools/pair)"
	echo
	echo "| processes | A | B | pairs | A ms | B ms | wall A/B | CPU A/B | A peak RSS MiB | B peak RSS MiB |"
	echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${PAIR_ROWS[@]}"
fi

echo
# binaries: goal 1 of issue 13 (least code under privilege) and what goal 3's
# peak is made of. For each binary: its size, the loaded sections that a
# run maps (code, read-only data, the function tables; readelf, from
# binutils, else "-"), the packages it links (go list, for the binaries
# built here), and which of the packages that must never run with
# capabilities it links (HTTP, TLS and crypto, SQL, SSH, pprof, terminal
# frameworks): "none" for memwho.
FORBIDDEN='^(net|net/.*|crypto|crypto/.*|vendor/.*|database/sql.*|runtime/pprof|golang.org/x/crypto/.*|modernc.org/.*|github.com/jackc/.*|github.com/pkg/sftp.*|github.com/prometheus/.*|github.com/klauspost/.*|google.golang.org/.*|github.com/charmbracelet/.*)$'
binary_row() {
	local name=$1 bin=$2 pkg=$3 sections="- | - | -" npkg=- bad=-
	if command -v readelf >/dev/null; then
		sections=$(readelf -SW "$bin" | awk '
			{ for (i = 1; i < NF; i++) if ($i == ".text" || $i == ".rodata" || $i == ".gopclntab") sz[$i] = $(i + 4) }
			function kb(h,   n, d, c) { n = 0; h = tolower(h); for (c = 1; c <= length(h); c++) { d = index("0123456789abcdef", substr(h, c, 1)) - 1; n = n * 16 + d }; return sprintf("%.0f", n / 1000) }
			END { printf "%s | %s | %s", kb(sz[".text"]), kb(sz[".rodata"]), kb(sz[".gopclntab"]) }')
	fi
	if [[ -n $pkg ]]; then
		CGO_ENABLED=0 go list -deps "$pkg" >"$TMP/deps"
		npkg=$(wc -l <"$TMP/deps")
		bad=$(grep -cE "$FORBIDDEN" "$TMP/deps" || true)
		if ((bad == 0)); then
			bad=none
		else
			bad="$bad, among them $(grep -E '^(net/http|crypto/tls|database/sql|modernc.org/sqlite|github.com/jackc/pgx/v5|github.com/pkg/sftp|golang.org/x/crypto/ssh)$' "$TMP/deps" | paste -sd' ' -)"
		fi
	fi
	echo "| $name | $(awk -v b="$(stat -c %s "$bin")" 'BEGIN { printf "%.2f", b / 1e6 }') | $sections | $npkg | $bad |"
}
echo "the binaries (issue 13's goal 1; a run maps most of the code, read-only data and function tables: see docs/performance.md)"
echo
echo "| binary | MB | code KB | read-only data KB | function tables KB | packages | packages that must not hold capabilities |"
echo "|---|---:|---:|---:|---:|---:|---|"
if [[ -n ${MEMWHO_BIN:-} ]]; then
	binary_row "memwho (MEMWHO_BIN)" "$MEMWHO" ""
else
	binary_row memwho "$MEMWHO" ./cmd/memwho
fi
if [[ -f $OUT/memwho-agent ]]; then
	binary_row memwho-agent "$OUT/memwho-agent" ./cmd/memwho-agent
fi
binary_row memwho-floor "$FLOOR" ./tools/floor
