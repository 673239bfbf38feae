# memwho rpm %post ($1: 1 install, 2 upgrade). Owner, mode and file
# capabilities come from the package (%attr, %caps): nothing to set.
if [ "$1" -eq 1 ]; then
	echo "memwho: members of the group memwho run memwho and see every process's exact figures; add one with: usermod -aG memwho USER (from their next login)"
fi
exit 0
