package sync

import (
	"net/url"
	"strings"
)

// targetDefaults fills and checks the target block (a relative sqlite path
// resolved against dir) and derives the target table from it.
func (j *Job) targetDefaults(bad func(key, format string, args ...any), dir string, lines map[string]int) {
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
	j.targetColumns(bad, lines)
}

// targetColumns checks the declared columns, fills their path and type
// defaults and adds them to the target table; with none declared the
// columns are inferred. Key and version must name declared columns.
func (j *Job) targetColumns(bad func(key, format string, args ...any), lines map[string]int) {
	t := &j.Target
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
}
