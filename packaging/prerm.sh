#!/bin/sh
# memwho package: before removal (deb: remove; rpm %preun: 0 erase). Stops
# and disables the units (an upgrade leaves them running). The package
# never enables them itself: docs/install.md.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now memwho.service memwho-export.timer memwho-export.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
