#!/bin/sh
# memwho package: after removal (deb: remove, purge, ...; rpm %postun:
# 0 erase, 1 upgrade). Purge (rpm: erase, which has no separate purge)
# deletes the user and the group memwho, so nothing is left; the members of
# the group lose only that membership.
set -e
case "$1" in
purge | 0)
	if getent passwd memwho >/dev/null; then
		userdel memwho || true
	fi
	# userdel may have taken the group with the user (USERGROUPS_ENAB).
	if getent group memwho >/dev/null; then
		groupdel memwho || true
	fi
	;;
esac
case "$1" in
remove | purge | 0)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
