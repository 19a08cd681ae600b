package jobfile

import (
	idsync "github.com/idemsync/idemsync/sync"

	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// loading is a job being loaded: the checks that fill its defaults and
// validate it are its methods.
type loading struct{ *idsync.Job }

// finish fills defaults (the only place that does), resolves relative paths,
// validates the spec and derives the target table. It returns the problems
// found, each naming the key and line.
func (j loading) finish(lines map[string]int) []string {
	var p []string
	bad := func(key, format string, args ...any) {
		p = append(p, lineOf(lines, key)+key+": "+fmt.Sprintf(format, args...))
	}
	dir := "."
	if j.File != "" {
		dir = filepath.Dir(j.File)
	}
	j.jobDefaults(bad, dir)
	j.sourceDefaults(bad)

	idsync.FillPagination(&j.Pagination, j.Source.Concurrency, bad)
	j.incrementalDefaults(bad)
	j.retryDefaults(bad)
	j.targetDefaults(bad, dir, lines)
	return p
}

// jobDefaults fills and checks the job's own keys: name, state (resolved
// against dir) and retention.
func (j loading) jobDefaults(bad func(key, format string, args ...any), dir string) {
	resolve := func(path string) string {
		if path == "" || filepath.IsAbs(path) {
			return path
		}
		abs, _ := filepath.Abs(filepath.Join(dir, path))
		return abs
	}

	switch {
	case j.Name == "":
		bad("name", "is required")
	case !jobNameRE.MatchString(j.Name):
		bad("name", "%q may only contain letters, digits, _ and -", j.Name)
	}
	if j.State == "" {
		j.State = idsync.DefaultStateFile
	}
	j.StatePath = resolve(j.State)
	if j.Retention.Duration == 0 {
		j.Retention.Duration = idsync.DefaultRetention
	}
}

// splitTable splits "schema.table" into its parts.
func splitTable(s string) (schema, name string) {
	if i := strings.IndexByte(s, '.'); i > 0 && i < len(s)-1 {
		return s[:i], s[i+1:]
	}
	return "", s
}

// TargetURL checks a target URL and resolves a relative sqlite path against
// dir. It accepts sqlite:PATH, sqlite://PATH, postgres:// and postgresql://.
func TargetURL(raw, dir string) (string, error) {
	switch {
	case strings.HasPrefix(raw, "sqlite:"):
		p := strings.TrimPrefix(raw, "sqlite:")
		p = strings.TrimPrefix(p, "//")
		if p == "" {
			return "", fmt.Errorf("sqlite: needs a file path, e.g. sqlite:out/orders.db")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		return "sqlite:" + abs, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("not a valid postgres URL")
		}
		if u.Host == "" {
			return "", fmt.Errorf("postgres URL needs a host")
		}
		return raw, nil
	}
	return "", fmt.Errorf("must start with sqlite: or postgres://")
}
