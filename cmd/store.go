package cmd

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/contract"
)

// openStore opens the state store at path: the one place that knows the
// concrete store (docs/architecture.md, "The state store"); everything
// else takes a contract.Store.
func openStore(ctx context.Context, path string, log *slog.Logger) (contract.Store, error) {
	return checkpoint.Open(ctx, path, log)
}

// stateMissing reports whether no state exists at path yet: the commands
// that only read it (status, prune) never create it.
func stateMissing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// realPath is the state at path as one identity, whatever path reaches it
// (a job's identity as a writer of its table is its name and this,
// cmd/owners.go): for the state file, path made absolute with its symlinks
// resolved (those of its folder when the file does not exist yet).
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(d, filepath.Base(abs))
	}
	return abs
}
