package sync

import (
	"fmt"
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
	j.jobDefaults(bad, dir)
	j.sourceDefaults(bad)

	// pagination
	s := &j.Source
	pg := &j.Pagination
	if pg.Style == "" {
		pg.Style = StyleNone
	}
	j.pagingDefaults(bad)
	if s.Concurrency > 1 && pg.Style != StylePage && pg.Style != StyleOffset {
		bad("source.concurrency", "only page and offset styles fetch pages concurrently")
	}

	j.incrementalDefaults(bad)
	j.retryDefaults(bad)
	j.targetDefaults(bad, dir, lines)
	return p
}

// jobDefaults fills and checks the job's own keys: name, state (resolved
// against dir) and retention.
func (j *Job) jobDefaults(bad func(key, format string, args ...any), dir string) {
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
		j.State = DefaultStateFile
	}
	j.StatePath = resolve(j.State)
	if j.Retention.Duration == 0 {
		j.Retention.Duration = DefaultRetention
	}
}

// pagingDefaults fills and checks the pagination block for its style.
func (j *Job) pagingDefaults(bad func(key, format string, args ...any)) {
	pg := &j.Pagination
	setParam := func(def string) {
		if pg.Param == "" {
			pg.Param = def
		}
	}
	unused := func(style string, keys map[string]bool) {
		for k, set := range keys {
			if set {
				bad("pagination."+k, "is not used with style %s", style)
			}
		}
	}
	switch pg.Style {
	case StylePage:
		setParam("page")
		if pg.Start == nil {
			one := int64(1)
			pg.Start = &one
		}
		if pg.Size < 0 {
			bad("pagination.size", "must be positive")
		}
		if pg.Size > 0 && pg.SizeParam == "" {
			bad("pagination.size_param", "is required when pagination.size is set")
		}
		unused(pg.Style, map[string]bool{"next": pg.Next != "", "next_header": pg.NextHeader != "", "next_url": pg.NextURL != "", "field": pg.Field != "", "initial": pg.Initial != "", "overlap": pg.Overlap != ""})
	case StyleOffset:
		setParam("offset")
		if pg.SizeParam == "" {
			pg.SizeParam = "limit"
		}
		if pg.Size <= 0 {
			bad("pagination.size", "is required with style offset (records per page)")
		}
		unused(pg.Style, map[string]bool{"next": pg.Next != "", "next_header": pg.NextHeader != "", "next_url": pg.NextURL != "", "field": pg.Field != "", "initial": pg.Initial != "", "overlap": pg.Overlap != "", "total_pages": pg.TotalPages != "", "start": pg.Start != nil})
	case StyleCursor:
		setParam("cursor")
		n := 0
		for _, s := range []string{pg.Next, pg.NextHeader, pg.NextURL} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			bad("pagination", "style cursor needs exactly one of next, next_header or next_url")
		}
		if pg.Size > 0 && pg.SizeParam == "" {
			bad("pagination.size_param", "is required when pagination.size is set")
		}
		unused(pg.Style, map[string]bool{"field": pg.Field != "", "initial": pg.Initial != "", "overlap": pg.Overlap != "", "total_pages": pg.TotalPages != "", "start": pg.Start != nil})
	case StyleLink:
		if pg.Size > 0 && pg.SizeParam == "" {
			bad("pagination.size_param", "is required when pagination.size is set")
		}
		unused(pg.Style, map[string]bool{"param": pg.Param != "", "next": pg.Next != "", "next_header": pg.NextHeader != "", "next_url": pg.NextURL != "", "field": pg.Field != "", "initial": pg.Initial != "", "overlap": pg.Overlap != "", "total_pages": pg.TotalPages != "", "start": pg.Start != nil})
	case StyleHWM:
		if pg.Field == "" {
			bad("pagination.field", "is required with style hwm (path of the mark in each record)")
		}
		if pg.Param == "" {
			bad("pagination.param", "is required with style hwm (query parameter receiving the mark)")
		}
		if pg.Size <= 0 {
			bad("pagination.size", "is required with style hwm (records per page: a short page ends the walk)")
		}
		if pg.Size > 0 && pg.SizeParam == "" {
			bad("pagination.size_param", "is required when pagination.size is set")
		}
		if err := checkOverlap(pg.Overlap); err != nil {
			bad("pagination.overlap", "%v", err)
		}
		if pg.MaxFuture.Duration == 0 {
			pg.MaxFuture.Duration = DefaultMaxFuture
		}
		if pg.Initial != "" {
			if _, err := CheckMark(pg.Initial); err != nil {
				bad("pagination.initial", "%v", err)
			}
		}
		unused(pg.Style, map[string]bool{"next": pg.Next != "", "next_header": pg.NextHeader != "", "next_url": pg.NextURL != "", "total_pages": pg.TotalPages != "", "start": pg.Start != nil, "continue": pg.Continue, "total": pg.Total != ""})
	case StyleNone:
		unused(pg.Style, map[string]bool{"param": pg.Param != "", "next": pg.Next != "", "next_header": pg.NextHeader != "", "next_url": pg.NextURL != "", "field": pg.Field != "", "total_pages": pg.TotalPages != "", "start": pg.Start != nil, "continue": pg.Continue, "initial": pg.Initial != "", "overlap": pg.Overlap != "", "total": pg.Total != ""})
	default:
		bad("pagination.style", "%q is not one of %s", pg.Style, strings.Join(styles, ", "))
	}
	if pg.Style != StyleHWM && pg.MaxFuture.Duration != 0 {
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
