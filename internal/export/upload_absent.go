//go:build nosftp

package export

import (
	"context"
	"time"

	"github.com/memwho/memwho/internal/cli"
)

// SFTP reports whether this build can upload: it was left out with the
// nosftp build tag, and with it package upload/sftp and its SSH and SFTP
// modules.
const SFTP = false

// PrepareUpload refuses every upload in a nosftp build.
func PrepareUpload(u *Upload, opt Options) (func(context.Context, Source) error, error) {
	return nil, cli.Usagef("--upload: this memwho was built without SFTP support (-tags nosftp)")
}

// UploadBackoff is unused in a nosftp build; it exists so that callers
// build the same way with and without the tag.
var UploadBackoff = time.Second
