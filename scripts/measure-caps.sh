#!/usr/bin/env bash
# Measures which capability each /proc read of memwho needs, on this
# kernel: a target process owned by another uid (root, and an ordinary
# uid) is read by an unprivileged user holding no capability,
# CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, or both (given as ambient
# capabilities with setpriv, so that they survive the exec of cat, ls and
# readlink). Prints a Markdown table. Run as root; creates the user
# memwho-test if it is missing.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "measure-caps.sh: run as root" >&2; exit 1; }
reader=memwho-test
id "$reader" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$reader"

# Targets: a root-owned process and one owned by nobody, each holding a
# file descriptor (fd 3, on /dev/null) to read back.
sleep 300 3</dev/null & rootpid=$!
setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300 3</dev/null & nobodypid=$!
trap 'kill $rootpid $nobodypid 2>/dev/null' EXIT
sleep 0.2

ops=(
  "status|cat /proc/P/status"
  "stat|cat /proc/P/stat"
  "statm|cat /proc/P/statm"
  "smaps_rollup|cat /proc/P/smaps_rollup"
  "smaps|cat /proc/P/smaps"
  "readlink exe|readlink /proc/P/exe"
  "cmdline|cat /proc/P/cmdline"
  "comm|cat /proc/P/comm"
  "cgroup|cat /proc/P/cgroup"
  "environ|cat /proc/P/environ"
  "readdir fd/|ls /proc/P/fd"
  "readlink fd/3|readlink /proc/P/fd/3"
  "readlink ns/net|readlink /proc/P/ns/net"
  "maps|cat /proc/P/maps"
  "pagemap (one entry)|dd if=/proc/P/pagemap bs=8 count=1 skip=S status=none | od -An -tx8 | grep -q ."
  "pagemap with a frame number|dd if=/proc/P/pagemap bs=8 count=1 skip=S status=none | od -An -tx8 | grep -qv '^ *[0-9a-f]\\{2\\}[08]0\\{13\\}$'"
  "kpagecount|dd if=/proc/kpagecount bs=8 count=1 status=none | od -An -tx8 | grep -q ."
)
capsets=("" "sys_ptrace" "dac_read_search" "sys_ptrace,dac_read_search")

try() { # $1 caps (comma list, may be empty), $2 command
  local c=$1 args=()
  if [ -n "$c" ]; then
    local plus="+${c//,/,+}"
    args=(--inh-caps="-all,$plus" --ambient-caps="-all,$plus")
  else
    args=(--inh-caps=-all)
  fi
  if setpriv --reuid="$reader" --regid="$reader" --clear-groups "${args[@]}" -- sh -c "$2" >/dev/null 2>&1; then
    echo ok
  else
    echo denied
  fi
}

for t in "root:$rootpid" "nobody:$nobodypid"; do
  owner=${t%%:*} pid=${t#*:}
  echo
  echo "Target owned by $owner (pid $pid), reader $reader:"
  echo
  echo "| read | no caps | CAP_SYS_PTRACE | CAP_DAC_READ_SEARCH | both |"
  echo "| --- | --- | --- | --- | --- |"
  # The entry of the target's first mapped page (its program text),
  # in pagemap's units of 8 bytes.
  start=$(head -1 "/proc/$pid/maps" | cut -d- -f1)
  skip=$((16#$start / 4096))
  for op in "${ops[@]}"; do
    name=${op%%|*} cmd=${op#*|}
    cmd=${cmd//P/$pid}
    cmd=${cmd//skip=S/skip=$skip}
    row="| \`$name\` |"
    for c in "${capsets[@]}"; do
      row="$row $(try "$c" "$cmd") |"
    done
    echo "$row"
  done
done
echo
echo "kernel $(uname -r)"
