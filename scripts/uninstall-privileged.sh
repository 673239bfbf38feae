#!/bin/sh
# Removes what scripts/install-privileged.sh installed: PREFIX/bin/memwho
# and PREFIX/bin/memwho-agent and, with --remove-group, the group (its members lose nothing else).
# Run as root. Idempotent.
set -eu

usage() {
	cat <<'EOF'
Usage: scripts/uninstall-privileged.sh [options]

Options:
  --prefix DIR     remove DIR/bin/memwho and memwho-agent (default /usr/local)
  --group NAME     the group install-privileged created (default memwho)
  --remove-group   delete the group as well

Examples:
  sudo scripts/uninstall-privileged.sh
  sudo make uninstall-privileged PREFIX=/opt/memwho
EOF
}

prefix=/usr/local
group=memwho
rmgroup=0
while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--group) group=$2; shift 2 ;;
	--group=*) group=${1#*=}; shift ;;
	--remove-group) rmgroup=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "uninstall-privileged: error: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

[ "$(id -u)" = 0 ] || { echo "uninstall-privileged: error: run as root" >&2; exit 1; }

for dest in "$prefix/bin/memwho" "$prefix/bin/memwho-agent"; do
	if [ -e "$dest" ]; then
		rm -f "$dest"
		echo "uninstall-privileged: removed $dest"
	fi
done
if [ $rmgroup = 1 ] && getent group "$group" >/dev/null; then
	groupdel "$group"
	echo "uninstall-privileged: removed group $group"
fi
