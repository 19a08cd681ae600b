package cmd

import (
	"context"
	"log/slog"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/source/auth"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// installAuth builds the job's source.auth chain on f; store keeps a
// rotated refresh token (nil when the command has no state file open).
func installAuth(ctx context.Context, job *idsync.Job, f *httpsource.Fetcher, store *checkpoint.Store, log *slog.Logger) error {
	o := auth.Options{Job: job.Name, Logger: log}
	if store != nil {
		o.Store = store
	}
	return auth.Install(ctx, job, f, o)
}
