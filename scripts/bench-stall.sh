#!/usr/bin/env bash
# bench-stall.sh measures what a read of a process's memory costs that
# process (tools/stall): a victim holds one private mapping of SIZES GiB,
# with 4 KiB pages (THP off) and transparent huge pages (THP on), and
# times its own mmap + write + munmap of one page while each reader reads
# it. Per reader and size it prints the worst and 99th percentile latency
# a read added, and the reader's CPU per read and per GiB. Not for CI: a
# full run takes about half an hour. Run it as root, on a quiet machine
# (docs/performance.md, "What a read costs the process read").
#
# Readers:
#   smaps_rollup   cat /proc/PID/smaps_rollup: the kernel's walk, bare
#   memwho report  memwho --fresh -p PID (a one-shot scan)
#   memwho watch   a tick of memwho watch --plain --fresh -n 1 (every process)
#   agent tick     a walk of memwho-agent serve --min-interval 1s (every process)
#   record tick    a sample of memwho-agent record --interval 1s -p PID
#   maps, smaps    cat /proc/PID/maps, cat /proc/PID/smaps: the mappings
#                  alone (no page walk), and smaps's walk (not per mapping
#                  on this kernel)
#   paced, no pause  stall read -pause 0: memwho's page-by-page read
#                  without its pauses (what they are for)
#   ps_mem         ps_mem -p PID (PyPI), smem -P (Debian), and Zmem when
#   smem, zmem     ZMEM names its binary (built by hand from its own
#                  repository: nothing of it is fetched here)
#
# Environment: SIZES ("1 8 max": max is the largest mapping that leaves
# 4 GiB of MemAvailable), THP ("off on"), READS=8, READERS (names to run,
# default all), MEMWHO_BIN and AGENT_BIN (binaries to use instead of
# building), ZMEM.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"1 8 max"}
THP=${THP:-"off on"}
READS=${READS:-8}
READERS=${READERS:-"smaps_rollup maps smaps nopause report watch agent record ps_mem smem zmem"}
ZMEM=${ZMEM:-}

if [ "$(id -u)" != 0 ]; then
  echo "bench-stall.sh: run as root: other users' readers (and the page lookups) need it" >&2
  exit 1
fi

work=$(mktemp -d /tmp/memwho-bench-stall-XXXXXX)
trap 'rm -rf "$work"' EXIT

export CGO_ENABLED=0
go build -o "$work/stall" ./tools/stall
if [ -z "${MEMWHO_BIN:-}" ]; then
  go build -trimpath -o "$work/" ./cmd/memwho ./cmd/memwho-agent
  MEMWHO_BIN=$work/memwho
  AGENT_BIN=$work/memwho-agent
fi
AGENT_BIN=${AGENT_BIN:-$(dirname "$MEMWHO_BIN")/memwho-agent}

want() { case " $READERS " in *" $1 "*) return 0 ;; esac; return 1; }

# The peers, installed where this run can remove them again: ps_mem into
# a directory of its own (pip --target), smem from Debian's packages.
if want ps_mem; then
  if python3 -m pip install -q --target "$work/py" ps_mem >/dev/null 2>&1; then
    printf '#!/bin/sh\nPYTHONPATH=%s exec python3 -m ps_mem "$@"\n' "$work/py" > "$work/ps_mem"
    chmod +x "$work/ps_mem"
  else
    echo "bench-stall.sh: ps_mem could not be installed from PyPI; skipped" >&2
    READERS=${READERS/ps_mem/}
  fi
fi
if want smem && ! command -v smem >/dev/null; then
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends smem >/dev/null 2>&1; then
    echo "bench-stall.sh: smem could not be installed; skipped" >&2
    READERS=${READERS/smem/}
  fi
fi
if want zmem && { [ -z "$ZMEM" ] || [ ! -x "$ZMEM" ]; }; then
  echo "bench-stall.sh: ZMEM not set; Zmem skipped" >&2
  READERS=${READERS/zmem/}
fi

args=()
want smaps_rollup && args+=(-r "smaps_rollup=oneshot:cat /proc/{pid}/smaps_rollup")
want maps && args+=(-r "maps=oneshot:cat /proc/{pid}/maps")
want smaps && args+=(-r "smaps=oneshot:cat /proc/{pid}/smaps")
want nopause && args+=(-r "paced, no pause=oneshot:$work/stall read -pause 0 {pid}")
want report && args+=(-r "memwho report=oneshot:$MEMWHO_BIN --fresh -p {pid}")
want watch && args+=(-r "memwho watch tick=periodic:$MEMWHO_BIN watch --plain --fresh -n 1")
want agent && args+=(-r "agent tick=periodic:$AGENT_BIN serve --socket $work/agent.sock --min-interval 1s --idle-after 0s")
want record && args+=(-r "record tick=periodic:$AGENT_BIN record --db $work/history.db --interval 1s --keep 0 -p {pid}")
want ps_mem && args+=(-r "ps_mem=oneshot:$work/ps_mem -p {pid}")
want smem && args+=(-r "smem=oneshot:smem -P ^stall$")
want zmem && args+=(-r "zmem=oneshot:$ZMEM -p")

thp_state=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)
echo "# $(date -u +%F) $(uname -r), $(nproc) cores, THP: $thp_state, memwho $(git rev-parse --short HEAD)"
first=1
for size in $SIZES; do
  if [ "$size" = max ]; then
    avail=$(awk '/^MemAvailable:/ {print int($2/1048576)}' /proc/meminfo)
    size=$((avail - 4))
  fi
  for thp in $THP; do
    rm -f "$work/history.db"*
    tbl=$("$work/stall" -gib "$size" -thp="$([ "$thp" = on ] && echo true || echo false)" -reads "$READS" "${args[@]}")
    if [ "$first" = 1 ]; then
      printf '%s\n' "$tbl"
      first=0
    else
      printf '%s\n' "$tbl" | tail -n +3
    fi
  done
done
