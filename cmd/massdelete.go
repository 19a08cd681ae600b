package cmd

import (
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// --allow-mass-delete lifts max_delete_ratio only for what the operator
// named (docs/deletions.md): in a file with several resources, the
// resources named with --resource; without one it is refused, so one
// flag never lifts the guard of every resource at once.

// checkAllowScope refuses --allow-mass-delete without --resource in a job
// file with several resources.
func checkAllowScope(jf *jobfile.File, opts idsync.Options, only []string) error {
	if !opts.AllowMassDelete || !jf.Multi || len(only) > 0 {
		return nil
	}
	return &usageError{err: fmt.Errorf("--allow-mass-delete: job %s has several resources; name the one whose sweep may remove more than max_delete_ratio with --resource (one of: %s)",
		jf.Name, strings.Join(jf.Names(), ", "))}
}

// allowCommand is the command that lets a refused sweep of job pass once:
// its file, with --resource for a resource of a file with several.
func allowCommand(job *idsync.Job) string {
	cmd := "idemsync run " + job.File
	if _, res, ok := strings.Cut(job.Name, jobfile.ResourceSep); ok {
		cmd += " --resource " + res
	}
	return cmd + " --allow-mass-delete"
}
