# memwho rpm %postun ($1: 0 erase, 1 upgrade): after an upgrade, a
# running agent or recorder moves to the new binary, as Fedora's
# %systemd_postun_with_restart. The user and group are never removed.
if [ "$1" -ge 1 ] && [ -d /run/systemd/system ]; then
	systemctl try-restart memwho.service memwho-record.service >/dev/null 2>&1 || :
fi
exit 0
