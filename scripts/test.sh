#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need
# (Debian packages), then checks formatting, vet, staticcheck, runs every
# test and builds the static binary. Servers the tests talk to (Prometheus,
# PostgreSQL, OpenSSH) are started by the tests themselves on 127.0.0.1
# with temporary directories. Tests that need root, swap or a server that
# is missing skip with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use: tmux drives the live view, prometheus
# scrapes the agent, postgresql and openssh hold history and receive
# exports, util-linux makes swap, libcap2-bin sets file capabilities,
# podman (with runc) runs a real container for --by container, groff
# renders the man pages, zsh and fish check the completion scripts,
# chromium (headless) renders the --html pages, iproute2 routes an IPv6
# prefix to lo in a network namespace (the agent's per-source limit),
# lintian, rpmlint, rpm and cpio check and install the packages
# (tools/pkg), systemd's systemd-analyze verifies the units, debootstrap
# makes the Debian root in which a real systemd runs them, catatonit is
# the pause process of the pods podman kube play runs, curl (with HTTP/2
# and OpenSSL) is a TLS client of the agent's web configuration.
pkgs=(tmux prometheus postgresql openssh-server openssh-client openssh-sftp-server util-linux libcap2-bin procps passwd time podman runc groff-base zsh fish chromium iproute2 lintian rpmlint rpm cpio systemd debootstrap catatonit curl)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # As root, apt-get directly (a fresh machine may have no sudo); as a
  # normal user, through sudo when it works without a password prompt.
  as_root=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      as_root=(sudo -n)
    else
      as_root=(false)
    fi
  fi
  if [ "${as_root[0]:-}" = false ]; then
    echo "test.sh: not root and no password-less sudo: cannot install ${missing[*]}; the tests that need them will skip"
  else
    echo "test.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update -qq
    # Keep package-shipped services from starting: the tests start their
    # own. A policy-rc.d is made only where there is none (noclobber: an
    # admin's own is never replaced, and then it decides), marked, and
    # removed only if it is still the one made here, also when apt fails.
    policy_rc=/usr/sbin/policy-rc.d
    policy_mark="# made by memwho's scripts/test.sh $$; it removes it after apt-get"
    remove_policy_rc() {
      "${as_root[@]}" sh -c '[ -f "$1" ] && [ ! -L "$1" ] && [ "$(sed -n 2p "$1")" = "$2" ] && rm -f "$1"' sh "$policy_rc" "$policy_mark" || true
    }
    if "${as_root[@]}" sh -c 'set -C; printf "#!/bin/sh\n%s\nexit 101\n" "$2" >"$1" && chmod 755 "$1"' sh "$policy_rc" "$policy_mark" 2>/dev/null; then
      trap remove_policy_rc EXIT
    else
      echo "test.sh: $policy_rc exists: left as it is (it decides which services the packages start)"
    fi
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    remove_policy_rc
    trap - EXIT
  fi
fi

export CGO_ENABLED=0
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
# Files built only with a tag: profiling (-tags pprof), bench.sh's
# floor inside memwho's binary (-tags floorpad), and the build without
# the live view (-tags notui) and the builds without SFTP or PostgreSQL
# (-tags nosftp, nopostgres), whose tests must build too.
go vet -tags pprof ./internal/profile ./cmd/memwho
go vet -tags floorpad ./cmd/memwho
go vet -tags notui ./internal/watch ./cmd/memwho
go vet -tags nosftp ./...
go vet -tags nopostgres ./...
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== go build (static)"
go build -trimpath -o "$(mktemp -d)" ./cmd/memwho ./cmd/memwho-agent
echo "== go test"
go test -count=1 -timeout 20m "$@" ./...
echo "== go test -tags pprof (the profiling build: --cpuprofile, --memprofile)"
go test -count=1 -timeout 10m -tags pprof "$@" ./internal/profile
go test -count=1 -timeout 10m -tags pprof -run 'Profile|ExitCodes|TestSignalPair' "$@" ./cmd/memwho
echo "== packages (tools/pkg: nfpm, its own module)"
(cd tools/pkg && go vet . && go test -count=1 -timeout 10m "$@" .)
