package cmd

import (
	"context"
	"log/slog"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/contract"
)

// openStore opens the state store at path: the one place that knows the
// concrete store (docs/architecture.md, "The state store"); everything
// else takes a contract.Store.
func openStore(ctx context.Context, path string, log *slog.Logger) (contract.Store, error) {
	return checkpoint.Open(ctx, path, log)
}
