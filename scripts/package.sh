#!/bin/sh
# Builds dist/memwho_VERSION-1_amd64.deb and dist/memwho-VERSION-1.x86_64.rpm
# (VERSION without a leading v; 1 is the release) from this checkout:
#
#   scripts/package.sh 1.2.0            # or: make package (version from git describe)
#   FORMATS=deb scripts/package.sh 1.2.0
#
# Reproducible: the binaries are built with -trimpath -buildvcs=false and the
# version stamped with -X main.version, and every timestamp in the packages
# is SOURCE_DATE_EPOCH, by default the time of the last commit; the same
# commit, version and Go toolchain give the same bytes (docs/install.md).
# What goes in the packages: packaging/nfpm.yaml; the maintainer scripts:
# packaging/deb/ and packaging/rpm/. Needs go and gzip; the packager (nfpm,
# pinned in tools/pkg/go.mod) comes through the Go module proxy. The
# license notices are generated from the modules linked into the binaries
# (tools/pkg/notices).
set -eu

[ $# = 1 ] || { echo "usage: scripts/package.sh VERSION" >&2; exit 2; }
# Package versions may not hold '-' (rpm) and must start with a digit. A
# git describe (v1.2.0-3-gabc1234[-dirty]) becomes 1.2.0+3.gabc1234[.dirty],
# which both dpkg and rpm sort after 1.2.0; memwho version prints VERSION as
# given.
version=$(printf '%s' "${1#v}" | sed 's/-/+/; s/-/./g')
case "$version" in
[0-9]*) ;;
*) echo "package: invalid version: $1 (want 1.2.0 or v1.2.0, or a git describe of such a tag)" >&2; exit 2 ;;
esac
case "$version" in
*[!A-Za-z0-9.~+]*) echo "package: invalid version: $1" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
formats=${FORMATS:-deb,rpm}
out=${OUT:-$here/dist}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The -X value is what "memwho version" prints: the version as given.
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=$1" -o "$stage" ./cmd/memwho ./cmd/memwho-agent

mkdir "$stage/man" "$stage/doc" "$stage/units"
for m in man/*.1; do
	gzip -9n <"$m" >"$stage/man/$(basename "$m").gz"
done
"$stage/memwho" completion bash >"$stage/memwho.bash"
"$stage/memwho" completion zsh >"$stage/_memwho"
"$stage/memwho" completion fish >"$stage/memwho.fish"
# The contrib units document an install in /usr/local/bin; the package's
# binaries are in /usr/bin. Only the commands change, not the comments.
for u in memwho.service memwho-record.service memwho-export.service memwho-export.timer; do
	sed '/^ExecStart=/s#/usr/local/bin/#/usr/bin/#' "contrib/$u" >"$stage/units/$u"
done
if grep -n '/usr/local/bin' "$stage"/units/*.service | grep -v ':#'; then
	echo "package: a packaged unit still runs something in /usr/local/bin" >&2
	exit 1
fi
# Every document: the man pages point at them in /usr/share/doc/memwho.
cp README.md docs/*.md "$stage/doc/"
mkdir "$stage/doc/img"
cp docs/img/* "$stage/doc/img/"
cp packaging/memwho.sysusers packaging/deb/lintian-overrides "$stage/"
(cd tools/pkg && go run ./notices -license "$here/LICENSE" -out "$stage" "$stage/memwho" "$stage/memwho-agent")
# Directory listings and file modes must not depend on the umask or on
# when the files were written.
find "$stage" -type f -exec chmod go-w {} +
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

(cd tools/pkg && go run . -config "$here/packaging/nfpm.yaml" -stage "$stage" \
	-version "$version" -out "$out" -formats "$formats" \
	-rpm-caps /usr/bin/memwho=cap_dac_read_search,cap_sys_ptrace=ep \
	-rpm-requires-pre shadow-utils -rpm-order-post systemd)
