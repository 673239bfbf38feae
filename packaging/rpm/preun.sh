# memwho rpm %preun ($1: 0 erase, 1 upgrade): on erase, stops and
# disables the units, as Fedora's %systemd_preun. The package never
# enables or starts them itself: docs/install.md.
if [ "$1" -eq 0 ] && command -v systemctl >/dev/null; then
	systemctl --no-reload disable --now memwho.service memwho-record.service memwho-export.timer memwho-export.service >/dev/null 2>&1 || :
fi
exit 0
