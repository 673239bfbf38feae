//go:build tools

// Package deps pins the third-party modules that memwho's packages use, so
// that go.mod keeps them while packages that import them are written. It
// is never built (the tools tag is never set).
package deps

import (
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/klauspost/compress/gzip"
	_ "github.com/landlock-lsm/go-landlock/landlock"
	_ "github.com/pkg/sftp"
	_ "github.com/prometheus/common/expfmt"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "kernel.org/pub/linux/libs/security/libcap/cap"
	_ "modernc.org/sqlite"
)
