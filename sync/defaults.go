package sync

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
)

// finish fills defaults (the only place that does), resolves relative paths,
// validates the spec and derives the target table. It returns the problems
// found, each naming the key and line.
func (j *Job) finish(lines map[string]int) []string {
	var p []string
	bad := func(key, format string, args ...any) {
		p = append(p, lineOf(lines, key)+key+": "+fmt.Sprintf(format, args...))
	}
	dir := "."
	if j.File != "" {
		dir = filepath.Dir(j.File)
	}
	resolve := func(path string) string {
		if path == "" || filepath.IsAbs(path) {
			return path
		}
		abs, _ := filepath.Abs(filepath.Join(dir, path))
		return abs
	}

	// name
	switch {
	case j.Name == "":
		bad("name", "is required")
	case !jobNameRE.MatchString(j.Name):
		bad("name", "%q may only contain letters, digits, _ and -", j.Name)
	}
	if j.State == "" {
		j.State = DefaultStateFile
	}
	j.StatePath = resolve(j.State)
	if j.Retention.Duration == 0 {
		j.Retention.Duration = DefaultRetention
	}

	// source
	s := &j.Source
	if s.URL == "" {
		bad("source.url", "is required")
	} else if err := validURL(s.URL); err != nil {
		bad("source.url", "%v", err)
	} else if u, _ := url.Parse(s.URL); u.User != nil {
		if pw, ok := u.User.Password(); ok {
			j.Secrets.Add(pw)
		}
	}
	s.Method = strings.ToUpper(s.Method)
	switch s.Method {
	case "":
		s.Method = http.MethodGet
	case http.MethodGet, http.MethodPost:
	default:
		bad("source.method", "%q must be GET or POST", s.Method)
	}
	if s.Body != "" && s.Method != http.MethodPost {
		bad("source.body", "is only allowed with method: POST")
	}
	for _, k := range sortedKeys(s.Headers) {
		j.Secrets.Add(s.Headers[k])
	}
	j.authDefaults(bad)
	if s.Timeout.Duration == 0 {
		s.Timeout.Duration = DefaultTimeout
	}
	if s.MaxBody == 0 {
		s.MaxBody = DefaultMaxBody
	}
	if s.Concurrency == 0 {
		s.Concurrency = 1
	}
	if s.Concurrency < 0 || s.Concurrency > 64 {
		bad("source.concurrency", "%d must be between 1 and 64", s.Concurrency)
	}
	if s.RateLimit < 0 {
		bad("source.rate_limit", "must not be negative")
	}

	// pagination
	pg := &j.Pagination
	if pg.Style == "" {
		pg.Style = StyleNone
	}
	j.pagingDefaults(bad)
	if _, numbered := styleOf(pg.Style).(numberedStyle); s.Concurrency > 1 && !numbered {
		bad("source.concurrency", "only %s styles fetch pages concurrently", concurrentStyles())
	}

	// incremental
	if inc := j.Incremental; inc != nil {
		if styleOf(pg.Style).traits().keepsMark {
			bad("incremental", "is not used with style %s (%s keeps its own mark)", pg.Style, pg.Style)
		}
		if inc.Field == "" {
			bad("incremental.field", "is required")
		}
		if inc.Param == "" {
			bad("incremental.param", "is required")
		}
		if err := checkOverlap(inc.Overlap); err != nil {
			bad("incremental.overlap", "%v", err)
		}
		if inc.Initial != "" {
			if _, err := CheckMark(inc.Initial); err != nil {
				bad("incremental.initial", "%v", err)
			}
		}
		if inc.Format == "" {
			inc.Format = FormatAsReceived
		}
		if err := checkMarkFormat(inc.Format); err != nil {
			bad("incremental.format", "%v", err)
		}
		if inc.MaxFuture.Duration == 0 {
			inc.MaxFuture.Duration = DefaultMaxFuture
		}
	}

	// retry
	r := &j.Retry
	if r.Attempts == 0 {
		r.Attempts = DefaultAttempts
	}
	if r.Attempts < 1 {
		bad("retry.attempts", "must be at least 1")
	}
	if r.MinWait.Duration == 0 {
		r.MinWait.Duration = DefaultMinWait
	}
	if r.MaxWait.Duration == 0 {
		r.MaxWait.Duration = max(DefaultMaxWait, r.MinWait.Duration)
	}
	if r.MaxWait.Duration < r.MinWait.Duration {
		bad("retry.max_wait", "must not be less than retry.min_wait")
	}
	if r.OnStatus == nil {
		r.OnStatus = append([]int(nil), DefaultRetryStatus...)
	}
	for _, c := range r.OnStatus {
		if c < 100 || c > 599 {
			bad("retry.on_status", "%d is not an HTTP status", c)
		}
	}

	// target
	t := &j.Target
	if t.URL == "" {
		bad("target.url", "is required")
	} else if u, err := TargetURL(t.URL, dir); err != nil {
		bad("target.url", "%v", err)
	} else {
		t.URL = u
		if pu, err := url.Parse(u); err == nil && pu.User != nil {
			if pw, ok := pu.User.Password(); ok {
				j.Secrets.Add(pw)
			}
		}
	}
	if t.Table == "" {
		bad("target.table", "is required")
	}
	if len(t.Key) == 0 {
		bad("target.key", "is required (the column or columns that identify a record)")
	}
	if t.Create == nil {
		yes := true
		t.Create = &yes
	}
	switch t.OnBadRecord {
	case "":
		t.OnBadRecord = DefaultOnBadRecord
	case "fail", "skip":
	default:
		bad("target.on_bad_record", "%q must be fail or skip", t.OnBadRecord)
	}
	t.finishTimeout(bad)
	checkTargetMode(t, bad)
	j.Table = Table{Key: t.Key, Version: t.Version, Create: *t.Create}
	j.Table.Schema, j.Table.Name = splitTable(t.Table)
	j.Infer = len(t.Columns) == 0
	names := map[string]bool{}
	for _, c := range t.Columns {
		key := "target.columns." + c.Name
		if c.Line > 0 {
			lines[key] = c.Line
		}
		if c.Name == "" || strings.HasPrefix(c.Name, "_idemsync_") {
			bad(key, "invalid column name (the _idemsync_ prefix is reserved)")
		}
		if names[c.Name] {
			bad(key, "duplicate column")
		}
		names[c.Name] = true
		if c.Path == "" {
			c.Path = c.Name
		}
		if c.Type == "" {
			c.Type = TypeText
		}
		if !c.Type.Valid() {
			bad(key+".type", "%q is not one of %v", c.Type, ColumnTypes)
		}
		j.Table.Columns = append(j.Table.Columns, Column{Name: c.Name, Path: c.Path, Type: c.Type})
	}
	if !j.Infer {
		for _, k := range t.Key {
			if !names[k] {
				bad("target.key", "column %q is not in target.columns", k)
			}
		}
		if t.Version != "" && !names[t.Version] {
			bad("target.version", "column %q is not in target.columns", t.Version)
		}
	}
	return p
}

// pagingDefaults fills and checks the pagination block for its style.
func (j *Job) pagingDefaults(bad func(key, format string, args ...any)) {
	pg := &j.Pagination
	if knownStyle(pg.Style) {
		styleOf(pg.Style).fill(pg, bad)
		rejectUnused(pg, bad)
	} else {
		bad("pagination.style", "%q is not one of %s", pg.Style, strings.Join(styleNames(func(pagingStyle) bool { return true }), ", "))
	}
	if !styleOf(pg.Style).traits().keepsMark && pg.MaxFuture.Duration != 0 {
		bad("pagination.max_future", "is not used with style %s (incremental.max_future is)", pg.Style)
	}
	if h, ok := strings.CutPrefix(pg.Total, "header:"); ok && strings.TrimSpace(h) == "" {
		bad("pagination.total", "header: needs a header name, e.g. header:X-Total-Count")
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
