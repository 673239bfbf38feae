#!/usr/bin/env bash
# fresh-machine.sh runs the README's two commands for a new machine, the
# build-and-run and ./scripts/test.sh, on a fresh Debian: a minimal rootfs
# made by debootstrap, with no sudo and none of the packages the tests
# need, imported into podman and started as a privileged container. It
# runs them as root first (test.sh installs the packages with apt-get),
# then, in the same container, as a new normal user without sudo.
#
# A green CI run on a machine that already has the packages can hide a
# missing install step; this cannot. Not for CI: it downloads a Debian
# base system and every package the tests use (about 10 minutes).
#
# Run as root on Debian, from a clone of the repository; the clone's
# committed HEAD is what is tested (uncommitted changes are not). Go is
# the README's prerequisite: the host's toolchain (go env GOROOT) is
# mounted read-only into the container.
#
# Environment:
#   SUITE=bookworm       Debian release of the rootfs
#   MIRROR=URL           Debian mirror (default http://deb.debian.org/debian)
#   KEEP=dir             keep the rootfs in dir (reused when it exists)
#   USER_RUN=0           skip the normal user's run
#
# What it says is also logged in full to $TMP/root.log and $TMP/user.log
# (the temporary directory is printed, and kept when a run fails).
#
# Inside a container two kinds of test meet limits that a machine has
# not, and skip there, saying so: podman cannot start a container on
# overlay over overlayfs (TestPodmanLive), and a process moved into a
# planted cgroup sits below this container's own libpod scope, which
# memwho names first (the container attacks of TestPrivilegedInstall).
# The normal user's run is held to the container's nproc limit (1000
# threads), as on a machine that limits its users.
set -euo pipefail

SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
USER_RUN=${USER_RUN:-1}

cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "fresh-machine.sh: run as root (debootstrap, podman)" >&2; exit 2; }
for t in debootstrap podman runc git go; do
	command -v "$t" >/dev/null || { echo "fresh-machine.sh: $t missing (apt-get install -y debootstrap podman runc git)" >&2; exit 2; }
done

TMP=$(mktemp -d /tmp/memwho-fresh.XXXXXX)
TAG=localhost/memwho-fresh:$$
ok=0
cleanup() {
	podman rmi -f "$TAG" >/dev/null 2>&1 || true
	if [[ $ok == 1 ]]; then rm -rf "$TMP"; else echo "fresh-machine.sh: logs kept in $TMP" >&2; fi
}
trap cleanup EXIT

ROOTFS=${KEEP:-$TMP/rootfs}
if [[ ! -x $ROOTFS/bin/bash ]]; then
	echo "== debootstrap $SUITE into $ROOTFS" >&2
	debootstrap --variant=minbase --include=ca-certificates,git "$SUITE" "$ROOTFS" "$MIRROR" >"$TMP/debootstrap.log" 2>&1 ||
		{ tail -20 "$TMP/debootstrap.log" >&2; exit 1; }
	# Certificate authorities this host trusts beyond Debian's (a proxy's):
	# the machine's own setup, not the project's.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
		chroot "$ROOTFS" update-ca-certificates >/dev/null
	fi
fi
tar -C "$ROOTFS" -c . | podman import -q - "$TAG" >/dev/null

git bundle create "$TMP/memwho.bundle" HEAD >/dev/null 2>&1
cat >"$TMP/inside.sh" <<'EOF'
#!/bin/bash
# Runs in the container: the README's two commands, as whoever runs it.
set -uo pipefail
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if command -v sudo >/dev/null; then echo "fresh: sudo is installed: not a fresh machine"; exit 9; fi
cd ~ && git clone -q /fresh/memwho.bundle memwho && cd memwho || exit 9
start=$SECONDS
CGO_ENABLED=0 go build -trimpath -o . ./cmd/memwho ./cmd/memwho-agent && ./memwho --top 5
echo "fresh: command 1 exit $? in $((SECONDS - start)) s"
start=$SECONDS
./scripts/test.sh
echo "fresh: command 2 exit $? in $((SECONDS - start)) s"
EOF
chmod 755 "$TMP/inside.sh"

cat >"$TMP/both.sh" <<EOF
#!/bin/bash
/fresh/inside.sh > /fresh/root.log 2>&1
if [ "$USER_RUN" = 1 ]; then
	useradd -m -s /bin/bash fresh
	su fresh -c 'HOME=/home/fresh /fresh/inside.sh' > /fresh/user.log 2>&1
fi
EOF
chmod 755 "$TMP/both.sh"
chmod 755 "$TMP"
chmod 644 "$TMP/memwho.bundle"

echo "== running the README's commands in a fresh $SUITE container (logs: $TMP)" >&2
podman run --rm --runtime runc --network host --privileged \
	--ulimit nofile=1024:1024 --ulimit nproc=1000:1000 \
	-v "$(go env GOROOT):/usr/local/go:ro" -v "$TMP:/fresh" "$TAG" /fresh/both.sh

status=0
for who in root user; do
	log=$TMP/$who.log
	[[ -f $log ]] || continue
	echo "== as $who" >&2
	grep -E '^fresh:' "$log" >&2 || true
	grep -E '^(--- FAIL|FAIL|ok )' "$log" | grep -v '^ok ' >&2 || true
	grep -E '^ +--- FAIL' "$log" >&2 || true
	grep -qE '^fresh: command 1 exit 0' "$log" || status=1
	grep -qE '^fresh: command 2 exit 0' "$log" || status=1
done
[[ $status == 0 ]] && ok=1
exit $status
