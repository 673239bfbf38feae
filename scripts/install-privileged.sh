#!/bin/sh
# Installs memwho so that the members of one group (and only they) see the
# exact memory of every process, without root:
#
#   owner root, group GROUP, mode 0750, file capabilities
#   cap_sys_ptrace,cap_dac_read_search+p
#
# CAP_SYS_PTRACE reads other users' /proc/PID/smaps_rollup (exact PSS and
# swap); CAP_DAC_READ_SEARCH lists /proc/PID/fd for the TCP and live
# features. memwho keeps only what each command needs, drops everything
# after the scan and opens every path the user names as the user (see
# docs/safe.md). memwho-agent (serve, record, leaks, export) is installed
# beside it as an ordinary program, root:root 0755, with no capability:
# memwho runs it for those commands after giving up its own. With --setuid it installs setuid root instead (mode 4750),
# for filesystems without extended attributes; memwho then switches to the
# real user at start-up, keeping the same two capabilities.
#
# Run as root. Idempotent.
set -eu

usage() {
	cat <<'EOF'
Usage: scripts/install-privileged.sh [options] [BINARY]

Installs BINARY (default: a fresh static build of ./cmd/memwho) as
PREFIX/bin/memwho, runnable by the members of GROUP, with the file
capabilities memwho needs, and memwho-agent (--agent, default: the
memwho-agent beside BINARY, else a fresh build of ./cmd/memwho-agent)
as PREFIX/bin/memwho-agent, an ordinary program without capabilities.

Options:
  --prefix DIR    install under DIR/bin (default /usr/local)
  --group NAME    group allowed to run memwho (default memwho; created
                  as a system group if missing)
  --add-user USER add USER to the group (repeatable; takes effect at the
                  user's next login)
  --agent FILE    the memwho-agent binary to install
  --setuid        setuid root instead of file capabilities (only where
                  the filesystem cannot store capabilities)

Examples:
  sudo scripts/install-privileged.sh --add-user alice
  sudo make install-privileged PREFIX=/opt/memwho USERS="alice bob"
EOF
}

prefix=/usr/local
group=memwho
setuid=0
users=""
binary=""
agent=""
while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--group) group=$2; shift 2 ;;
	--group=*) group=${1#*=}; shift ;;
	--add-user) users="$users $2"; shift 2 ;;
	--add-user=*) users="$users ${1#*=}"; shift ;;
	--agent) agent=$2; shift 2 ;;
	--agent=*) agent=${1#*=}; shift ;;
	--setuid) setuid=1; shift ;;
	-h|--help) usage; exit 0 ;;
	-*) echo "install-privileged: error: unknown option $1" >&2; usage >&2; exit 2 ;;
	*) binary=$1; shift ;;
	esac
done

die() { echo "install-privileged: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (the binary must belong to root)"
command -v setcap >/dev/null || [ $setuid = 1 ] || die "setcap not found (Debian: apt-get install libcap2-bin)"

here=$(cd "$(dirname "$0")/.." && pwd)
built=$(mktemp -d)
trap 'rm -rf "$built"' EXIT
if [ -z "$binary" ]; then
	echo "install-privileged: building $here/cmd/memwho"
	binary=$built/memwho
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$binary" ./cmd/memwho) || die "build failed"
fi
[ -f "$binary" ] || die "$binary: no such file"
if [ -z "$agent" ]; then
	agent=$(dirname "$binary")/memwho-agent
	if [ ! -f "$agent" ]; then
		echo "install-privileged: building $here/cmd/memwho-agent"
		agent=$built/memwho-agent
		(cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$agent" ./cmd/memwho-agent) || die "build failed"
	fi
fi
[ -f "$agent" ] || die "$agent: no such file"

if ! getent group "$group" >/dev/null; then
	groupadd --system "$group" || die "cannot create group $group"
	echo "install-privileged: created group $group"
fi
for u in $users; do
	usermod -a -G "$group" "$u" || die "cannot add $u to $group"
	echo "install-privileged: added $u to $group"
done

dir=$prefix/bin
dest=$dir/memwho
mkdir -p "$dir"
# The agent first: memwho finds it beside itself. An ordinary program.
tmp=$dir/.memwho-agent.install.$$
cp "$agent" "$tmp"
chown root:root "$tmp"
chmod 0755 "$tmp"
mv -f "$tmp" "$dir/memwho-agent"
echo "install-privileged: installed $dir/memwho-agent (root:root 0755, no capabilities)"
# Install under a temporary name and rename, so that the path never
# names a half-written or wrongly-permissioned file. chown clears file
# capabilities, so capabilities come last.
tmp=$dir/.memwho.install.$$
cp "$binary" "$tmp"
chown "root:$group" "$tmp"
if [ $setuid = 1 ]; then
	chmod 4750 "$tmp"
else
	chmod 0750 "$tmp"
	if ! setcap cap_sys_ptrace,cap_dac_read_search+p "$tmp"; then
		rm -f "$tmp"
		die "setcap failed: the filesystem of $dir cannot store capabilities (try another --prefix, or --setuid)"
	fi
fi
mv -f "$tmp" "$dest"

if [ $setuid = 1 ]; then
	echo "install-privileged: installed $dest (root:$group 4750, setuid root)"
else
	echo "install-privileged: installed $dest (root:$group 0750, $(getcap "$dest" | sed 's/^[^ ]* //'))"
fi
