//go:build nopostgres

// Package postgres is the fleet history database; this build leaves it
// out (-tags nopostgres), and pgx with it.
//
// memwho's optional parts all work the same way: each is one package
// that the rest of memwho imports unconditionally. Its implementation
// files carry //go:build !noX; one file carrying //go:build noX (named
// absent.go or *_absent.go) keeps the package buildable and says the
// part is missing: here by registering nothing, so that store.Open
// answers a postgres:// target with "unsupported database"; in package
// watch (notui) with TUI = false; in package export (nosftp) with
// SFTP = false and a PrepareUpload that refuses. No build tag appears
// outside those packages.
package postgres
