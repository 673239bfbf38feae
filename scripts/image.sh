#!/bin/sh
# Builds the OCI image of memwho-agent for fleets, without a container
# engine (tools/pkg/oci writes the image layout itself):
#
#   scripts/image.sh 1.2.0        # dist/memwho-agent-1.2.0.oci.tar, prints its digest
#   podman load -i dist/memwho-agent-1.2.0.oci.tar
#   skopeo copy oci-archive:dist/memwho-agent-1.2.0.oci.tar docker://REGISTRY/memwho-agent:1.2.0
#
# FROM scratch: the static binary (no file capability: the DaemonSet
# gives it exactly CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH), /etc/passwd
# and /etc/group naming the image's user memwho (65532, not root), and
# the license notices in /licenses. Reproducible: the binary is built as for the packages
# (-trimpath -buildvcs=false, the version by -X), every timestamp is
# SOURCE_DATE_EPOCH (default: the last commit's time), so the same
# commit, version and Go toolchain give the same digest. The DaemonSet
# that runs it: deploy/kubernetes/memwho-agent.yaml (docs/install.md).
set -eu
[ $# = 1 ] || { echo "usage: scripts/image.sh VERSION" >&2; exit 2; }
# The image's tag: an OCI tag holds no + or ~ (a git describe's
# 1.2.0-3-gabc1234 stays as it is); memwho-agent version prints $1.
version=$(printf '%s' "${1#v}" | tr '+~' '--')
case "$version" in
[0-9]*) ;;
*) echo "image: invalid version: $1 (want 1.2.0 or v1.2.0)" >&2; exit 2 ;;
esac
case "$version" in
*[!A-Za-z0-9._-]*) echo "image: invalid version: $1" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
out=${OUT:-$here/dist}
mkdir -p "$out"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=$1" -o "$stage/memwho-agent" ./cmd/memwho-agent
(cd tools/pkg && go run ./notices -license "$here/LICENSE" -out "$stage" "$stage/memwho-agent" &&
	go run ./oci -binary "$stage/memwho-agent" -notices "$stage" -version "$version" \
		-out "$out/memwho-agent-$version.oci.tar")
