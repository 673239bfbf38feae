# memwho rpm %pre: creates the system group and user memwho (as
# /usr/lib/sysusers.d/memwho.conf defines them; Fedora's
# %sysusers_create_compat does the same) before the files are unpacked,
# since /usr/bin/memwho is unpacked %attr(0750,root,memwho). They are
# never removed (rpm erase leaves both, as Fedora asks: files they own
# may outlive the package).
getent group memwho >/dev/null || groupadd --system memwho || exit 1
getent passwd memwho >/dev/null ||
	useradd --system --gid memwho --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --comment "memwho agent and recorder" memwho || exit 1
exit 0
