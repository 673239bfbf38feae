//go:build !nopostgres

package main

// PostgreSQL history databases (--db postgres://...) for record, leaks
// and export; -tags nopostgres leaves pgx out of the binary.
import _ "github.com/memwho/memwho/internal/store/postgres"
