package sample

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/prometheus/procfs"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/rogpeppe/go-internal/txtar"
	_ "golang.org/x/sys/unix"
)
