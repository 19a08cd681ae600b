package cmd

import (
	"context"
	"log/slog"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/source/auth"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// installAuth builds the job's source.auth chain on f; store keeps a
// rotated refresh token (nil when the command has no state file open),
// under the job file's name, shared through g's keyring by every resource
// of the file using the same credential.
func installAuth(ctx context.Context, g *globalOpts, job *idsync.Job, f *httpsource.Fetcher, store contract.Store, log *slog.Logger) error {
	file, _, _ := strings.Cut(job.Name, jobfile.ResourceSep)
	o := auth.Options{Job: file, Logger: log, Keyring: g.keyring}
	if store != nil {
		o.Store = store
	}
	return auth.Install(ctx, job, f, o)
}

// newKeyring is the keyring of the refresh tokens of jf's resources.
func newKeyring(jf *jobfile.File) *auth.Keyring {
	var auths []*spec.Auth
	for _, r := range jf.Resources {
		auths = append(auths, r.Job.Source.Auth)
	}
	return auth.NewKeyring(auths...)
}
