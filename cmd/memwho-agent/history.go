package main

import (
	"flag"

	"github.com/memwho/memwho/internal/store"
	// The history's back ends register with store.Open, which chooses
	// among them by the --db value. PostgreSQL is an optional part: in a
	// -tags nopostgres build the package is an empty stub (see
	// internal/store/postgres/absent.go), and store.Open says so.
	_ "github.com/memwho/memwho/internal/store/postgres"
	_ "github.com/memwho/memwho/internal/store/sqlite"
)

// historyFlags is the --db flag that record, leaks and export share.
type historyFlags struct{ db string }

func (h *historyFlags) register(fs *flag.FlagSet) { fs.StringVar(&h.db, "db", "", "") }

// target returns --db, or the database record writes by default.
func (h *historyFlags) target() (string, error) {
	if h.db != "" {
		return h.db, nil
	}
	return store.DefaultDB()
}
