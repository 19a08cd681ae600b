package jobfile

import (
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/urlquery"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sink/targets"

	"net/url"
	"strings"
	"time"
)

// urlPasswords returns the passwords a database URL holds: its userinfo's
// and its query's password= and sslpassword= (docs/job-file.md, "What is
// and is not a secret").
func urlPasswords(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if pw, ok := u.User.Password(); ok {
		out = append(out, pw)
	}
	q := urlquery.Parse(u.RawQuery) // a value holding ';' included (net/url drops it)
	for _, k := range q.Keys() {
		if l := strings.ToLower(k); l == "password" || l == "sslpassword" {
			out = append(out, q.Values(k)...)
		}
	}
	return out
}

// targetDefaults fills and checks the target block (its URL checked and
// resolved against dir by the database it names, package sink/targets) and derives the target table from it.
func (j loading) targetDefaults(bad func(key, format string, args ...any), dir string, lines map[string]int) {
	t := &j.Target
	if t.URL == "" {
		bad("target.url", "is required")
	} else if u, file, err := targets.ResolveURL(t.URL, dir); err != nil {
		bad("target.url", "%v", err)
	} else {
		t.URL = u
		if !file && t.Mode != "" {
			bad("target.mode", "applies to file databases only (sqlite:): a database server owns its files")
		}
		j.Secrets.Add(urlPasswords(u)...)
	}
	if t.Table == "" {
		bad("target.table", "is required")
	}
	if len(t.Key) == 0 {
		bad("target.key", "is required (the column or columns that identify a record)")
	}
	finishTimeout(t, bad)
	checkTargetMode(t, bad)
	checkDeletes(t, bad)
	j.Table = contract.Table{Key: t.Key, Version: t.Version, Create: *t.Create, Deletes: t.Deletes}
	j.Table.Schema, j.Table.Name = splitTable(t.Table)
	if t.ChangesRows && !t.Changes {
		bad("target.changes_rows", "needs target.changes: true")
	}
	j.Table.FeedJob = j.Name
	if t.Changes { // a resource's Resource is set by LoadResources
		j.Table.Changes = &contract.Changes{Job: j.Name, Resource: j.Name, Rows: t.ChangesRows}
	}
	j.Infer = len(t.Columns) == 0
	j.targetColumns(bad, lines)
	j.targetChildren(bad, lines)
	checkSchemaContract(t, j.Infer, bad, lines)
}

// targetColumns checks the declared columns, fills their path and type
// defaults and adds them to the target table; with none declared the
// columns are inferred. Key and version must name declared columns.
func (j loading) targetColumns(bad func(key, format string, args ...any), lines map[string]int) {
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
		if c.Parent != "" { // the parent's value; its type defaults to the parent column's (linkParent)
			if c.Path != "" {
				bad(key, "give either path or parent")
			}
			if c.Type != "" && !c.Type.Valid() {
				bad(key+".type", "%q is not one of %v", c.Type, contract.ColumnTypes)
			}
			j.Table.Columns = append(j.Table.Columns, contract.Column{Name: c.Name, Type: c.Type, Parent: c.Parent})
			continue
		}
		if c.Path == "" {
			c.Path = c.Name
		}
		if c.Type == "" {
			c.Type = contract.TypeText
		}
		if !c.Type.Valid() {
			bad(key+".type", "%q is not one of %v", c.Type, contract.ColumnTypes)
		}
		j.Table.Columns = append(j.Table.Columns, contract.Column{Name: c.Name, Path: c.Path, Type: c.Type})
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

// checkTargetMode validates target.mode: an octal permission of at most
// 0777 that lets the owner read and write, on an SQLite target.
func checkTargetMode(t *spec.Target, bad func(key, format string, args ...any)) {
	if t.Mode == "" {
		return
	}
	m, err := spec.ParseMode(t.Mode)
	switch {
	case err != nil:
		bad("target.mode", "%q is not an octal permission such as \"0640\"", t.Mode)
	case m > 0o777:
		bad("target.mode", "%q is not a permission: at most 0777 (no setuid, setgid or sticky bits)", t.Mode)
	case m&0o600 != 0o600:
		bad("target.mode", "%q must let the owner read and write the file (0600 at least)", t.Mode)
	}
}

// finishTimeout fills target.timeout's defaults and reports, through bad,
// a value PostgreSQL cannot honour (it counts whole milliseconds, and 0
// would mean no limit at all).
func finishTimeout(t *spec.Target, bad func(key, format string, args ...any)) {
	if t.Timeout == nil {
		t.Timeout = &spec.TargetTimeout{}
	}
	for _, d := range []struct {
		key string
		v   *spec.Duration
		def time.Duration
	}{
		{"target.timeout.lock", &t.Timeout.Lock, contract.DefaultLockTimeout},
		{"target.timeout.statement", &t.Timeout.Statement, contract.DefaultStatementTimeout},
	} {
		switch {
		case d.v.Duration == 0:
			d.v.Duration = d.def
		case d.v.Duration < time.Millisecond:
			bad(d.key, "%s is below the database's resolution of 1ms", d.v.Duration)
		case d.v.Duration > maxTimeout:
			bad(d.key, "%s exceeds the largest limit, %s", d.v.Duration, maxTimeout)
		}
	}
}

// maxTimeout is the largest lock_timeout/statement_timeout PostgreSQL
// accepts (INT_MAX milliseconds).
const maxTimeout = time.Duration(1<<31-1) * time.Millisecond

// checkDeletes checks target.tombstone against target.deletes: a
// tombstone deletes or marks, so it needs deletes soft or hard, a field
// and a scalar value.
func checkDeletes(t *spec.Target, bad func(key, format string, args ...any)) {
	tb := t.Tombstone
	if tb == nil {
		return
	}
	if t.Deletes != contract.DeletesSoft && t.Deletes != contract.DeletesHard {
		bad("target.tombstone", "needs target.deletes: soft or hard (it is %s)", t.Deletes)
	}
	if tb.Field == "" {
		bad("target.tombstone.field", "is required")
	}
	switch tb.Value.(type) {
	case bool, string, int, int64, float64:
	case nil:
		bad("target.tombstone.value", "is required (a boolean, a number or a string)")
	default:
		bad("target.tombstone.value", "must be a boolean, a number or a string")
	}
}
