#!/bin/sh
# memwho package: after unpacking (deb: configure; rpm %post: 1 install,
# 2 upgrade). Creates the system group memwho (who may run memwho) and the
# system user memwho (memwho.service runs as it), then gives /usr/bin/memwho
# to the group with the file capabilities, as scripts/install-privileged.sh
# does. Idempotent: an upgrade unpacks a fresh root:root 0750 binary
# without capabilities, and this runs again.
set -e
case "$1" in
configure | 1 | 2) ;;
*) exit 0 ;;
esac

if ! getent group memwho >/dev/null; then
	groupadd --system memwho
fi
if ! getent passwd memwho >/dev/null; then
	useradd --system --gid memwho --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --comment "memwho agent" memwho
fi

bin=/usr/bin/memwho
# chown clears file capabilities: capabilities come last.
chown root:memwho "$bin"
chmod 0750 "$bin"
if ! setcap cap_sys_ptrace,cap_dac_read_search+p "$bin" 2>/dev/null; then
	# A filesystem without extended attributes: setuid root, which memwho
	# turns into the same two capabilities of the real user at start-up
	# (docs/safe.md).
	chmod 4750 "$bin"
	echo "memwho: warning: cannot set file capabilities on $bin (no extended attributes on this filesystem?); installed setuid root (4750) instead, see /usr/share/doc/memwho/safe.md" >&2
fi

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	# An upgrade: a running agent moves to the new binary. Nothing is
	# started that was not running.
	systemctl try-restart memwho.service >/dev/null 2>&1 || true
fi
exit 0
