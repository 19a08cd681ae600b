package cmd

import (
	"os"
	"strings"

	idsync "github.com/idemsync/idemsync/sync"
)

// stateFrom says where statePath took the state file's path from, in the
// words an operator needs to point a command at another one.
func (g *globalOpts) stateFrom(job *idsync.Job) string {
	switch {
	case g.state != "":
		return "--state"
	case os.Getenv("IDEMSYNC_STATE") != "":
		return "$IDEMSYNC_STATE"
	case job != nil && job.State != "":
		return "the job file's state:"
	case job != nil:
		return "the default beside the job file (.idemsync/state.db)"
	}
	return "the default in the current folder (.idemsync/state.db)"
}

// stateNotFound tells an operator whose status found no run of the job
// file's jobs where it looked: the scheduler may keep the state elsewhere
// (a crontab's IDEMSYNC_STATE, a unit's --state), which an operator's shell
// does not have (issue 28; docs/operations.md, Status).
func (g *globalOpts) stateNotFound(job *idsync.Job, path, file string) string {
	s := "no run in " + stateName(path) + ", from " + g.stateFrom(job)
	if g.state == "" {
		s += "; if a scheduler runs the job with IDEMSYNC_STATE or --state, name the same file: idemsync status --state PATH " + quoteArg(file)
	}
	return s
}

// quoteArg quotes a command-line argument for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
