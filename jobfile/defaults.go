package jobfile

import (
	idsync "github.com/idemsync/idemsync/sync"
	"github.com/idemsync/idemsync/sync/paging"

	"fmt"
	"path/filepath"
	"strings"
)

// loading is a job being loaded: the checks that fill its defaults and
// validate it are its methods.
type loading struct{ *idsync.Job }

// finish fills defaults (the only place that does: the rules' defaults
// first, then those that depend on other keys), resolves relative paths,
// validates the spec and derives the target table. It returns the problems
// found, each naming the key and line: the checks of the code first, then
// the rules' checks of every key the code found no problem with.
func (j loading) finish(lines map[string]int) []string {
	var p []string
	reported := map[string]bool{}
	bad := func(key, format string, args ...any) {
		reported[key] = true
		p = append(p, lineOf(lines, key)+key+": "+fmt.Sprintf(format, args...))
	}
	fillRules(&j.Spec, lines, bad)
	dir := "."
	if j.File != "" {
		dir = filepath.Dir(j.File)
	}
	j.jobDefaults(bad, dir)
	j.sourceDefaults(bad)

	paging.FillPagination(&j.Pagination, j.Source.Concurrency, bad)
	j.bodyDefaults(bad, lines)
	j.incrementalDefaults(bad)
	j.retryDefaults(bad)
	j.targetDefaults(bad, dir, lines)
	checkRules(&j.Spec, reported, bad)
	return p
}

// jobDefaults fills and checks the job's own keys: name, state (resolved
// against dir) and retention.
func (j loading) jobDefaults(bad func(key, format string, args ...any), dir string) {
	resolve := func(path string) string {
		// A URL (state: postgres://…) names a state in a database, not a
		// file (docs/job-file.md).
		if path == "" || filepath.IsAbs(path) || strings.Contains(path, "://") {
			return path
		}
		abs, _ := filepath.Abs(filepath.Join(dir, path))
		return abs
	}

	if j.Name == "" {
		bad("name", "is required")
	}
	for _, d := range j.Decide {
		bad("decide", "left open by idemsync init: %s (make the decision in the file, then delete this entry)", d)
	}
	j.StatePath = resolve(j.State)
	if strings.Contains(j.State, "://") {
		j.Secrets.Add(urlPasswords(j.State)...) // a state in PostgreSQL: its passwords are secrets
	}
}

// splitTable splits "schema.table" into its parts.
func splitTable(s string) (schema, name string) {
	if i := strings.IndexByte(s, '.'); i > 0 && i < len(s)-1 {
		return s[:i], s[i+1:]
	}
	return "", s
}
