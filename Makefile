# Convenience targets; scripts/test.sh is the test command.
#
#   make                          static binaries ./memwho and ./memwho-agent
#   make release                  the same, stripped, with the version from git describe
#   make package                  dist/*.deb and dist/*.rpm, version from git describe (docs/install.md)
#   sudo make install-privileged  PREFIX=/usr/local GROUP=memwho USERS="alice bob"
#   sudo make uninstall-privileged
PREFIX ?= /usr/local
GROUP ?= memwho
USERS ?=

.PHONY: build release package test install-privileged install-privileged-setuid uninstall-privileged

build:
	CGO_ENABLED=0 go build -trimpath -o . ./cmd/memwho ./cmd/memwho-agent

# -X main.version works wherever git does, a linked worktree too. The VCS
# stamp of -buildvcs=true needs a .git directory (a plain clone; go build
# does not recognise a worktree's .git file), and there Go also records a
# pseudo-version (v0.0.0-DATE-REV+dirty). A build without either prints
# devel-REV[+dirty] (DATE) when only the stamp is there, else (devel).
release:
	CGO_ENABLED=0 go build -trimpath -buildvcs=true -ldflags "-s -w -X main.version=$$(git describe --tags --always --dirty)" -o . ./cmd/memwho ./cmd/memwho-agent

# Before the first tag: 0.0.0+gREV.
package:
	scripts/package.sh "$$(git describe --tags --dirty 2>/dev/null || echo 0.0.0-g$$(git rev-parse --short HEAD))"

test:
	scripts/test.sh

install-privileged: build
	scripts/install-privileged.sh --prefix "$(PREFIX)" --group "$(GROUP)" $(foreach u,$(USERS),--add-user $(u)) --agent memwho-agent memwho

# Only for filesystems that cannot store file capabilities.
install-privileged-setuid: build
	scripts/install-privileged.sh --setuid --prefix "$(PREFIX)" --group "$(GROUP)" $(foreach u,$(USERS),--add-user $(u)) --agent memwho-agent memwho

uninstall-privileged:
	scripts/uninstall-privileged.sh --prefix "$(PREFIX)" --group "$(GROUP)"
