package export

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/memwho/memwho/internal/atomicfile"
	"github.com/memwho/memwho/internal/store"
)

// History returns the Source of table t of the samples of st that q
// selects. Names are neutralised on the way out, the same way for both
// stores: escaped like the report's CSV (one record per line, no control
// or bidi character reaches a terminal) and with formula characters
// defused for spreadsheets: by the store itself when it is a
// store.SafeExporter, by a CellWriter over its CSV otherwise.
func History(st store.Store, q store.Query, t store.Table) Source {
	if se, ok := st.(store.SafeExporter); ok {
		// One pass: the store neutralises while it formats.
		return func(ctx context.Context, w io.Writer) error {
			return se.ExportSafeCSV(ctx, q, t, w)
		}
	}
	return func(ctx context.Context, w io.Writer) error {
		cw := NewCellWriter(w, store.IsTextColumn)
		if err := st.ExportCSV(ctx, q, t, cw); err != nil {
			return err
		}
		return cw.Flush()
	}
}

// Upload is where and how an export is uploaded (--upload and the flags
// that go with it).
type Upload struct {
	// URL is sftp://[user@]host[:port]/path/name.
	URL string
	// Identity is the private key file; "" uses ssh-agent through
	// SSH_AUTH_SOCK.
	Identity string
	// KnownHosts is the known_hosts file; "" is ~/.ssh/known_hosts.
	KnownHosts string
	// Retries is how many times a dropped upload starts again.
	Retries int
	// Open opens the key and known_hosts files: with the user's own
	// rights when memwho has more (privilege.OpenFile).
	Open func(name string) (*os.File, error)
	// Log receives the warnings of retried uploads.
	Log io.Writer
}

// ToFile writes the export to the file name, created by create: a new
// temporary file beside it, synced and renamed over name when the whole
// export and every write succeeded, removed otherwise. Nothing partial
// ever carries the final name, and a failed export leaves an older file
// of that name intact.
func ToFile(ctx context.Context, name string, create func(string) (*atomicfile.File, error), opt Options, src Source) error {
	f, err := create(name)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	defer f.Abort()
	if _, err := Run(ctx, f, opt, src); err != nil {
		return fmt.Errorf("-o %s: %w", name, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}
