package cmd

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"

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
