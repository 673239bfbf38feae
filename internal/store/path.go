package store

import (
	"errors"
	"os"
	"path/filepath"
)

// DefaultDBHelp describes DefaultDir and DefaultDB for usage texts.
const DefaultDBHelp = `$MEMWHO_DB if set; else /var/lib/memwho/history.db as root
(a system recorder), $XDG_STATE_HOME/memwho/history.db or
~/.local/state/memwho/history.db otherwise.`

// DefaultDir returns memwho's state directory: /var/lib/memwho for root
// (a recorder run as a system service sees every process, and its
// history belongs with the system's), else $XDG_STATE_HOME/memwho, else
// ~/.local/state/memwho (the XDG base directory specification's place
// for state that persists across restarts but is not worth backing up).
func DefaultDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/lib/memwho", nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "memwho"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no home directory for the default history database: use --db")
	}
	return filepath.Join(home, ".local", "state", "memwho"), nil
}

// DefaultDB returns the database record, leaks and export use without
// --db: $MEMWHO_DB when set, else history.db in DefaultDir.
func DefaultDB() (string, error) {
	if db := os.Getenv("MEMWHO_DB"); db != "" {
		return db, nil
	}
	dir, err := DefaultDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "history.db"), nil
}
