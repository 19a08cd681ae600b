package jobfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
	"github.com/idemsync/idemsync/sync/paging"
)

// fanoutKeys are the keys of a child resource (docs/job-file.md, "Parent →
// child fan-out"), read from the resource's own mapping before its job is
// loaded: they are no job keys.
var fanoutKeys = []string{"parent", "parent_rows", "fanout_concurrency"}

// fanout is a resource's parent→child keys as written (nil when absent).
type fanout struct {
	parent, rows, conc *yaml.Node
}

func readFanout(r *yaml.Node) fanout {
	return fanout{parent: mapValue(r, "parent"), rows: mapValue(r, "parent_rows"), conc: mapValue(r, "fanout_concurrency")}
}

// withoutFanout returns r without the fan-out keys.
func withoutFanout(r *yaml.Node) *yaml.Node {
	for _, k := range fanoutKeys {
		r = withoutKey(r, k)
	}
	return r
}

// defaultsFanout returns a problem when defaults: holds a fan-out key.
func defaultsFanout(defaults *yaml.Node) string {
	for _, k := range fanoutKeys {
		if v := mapValue(defaults, k); v != nil {
			return fmt.Sprintf("line %d: defaults: %s belongs to a resource (each child names its own parent)", v.Line, k)
		}
	}
	return ""
}

// linkParent makes job the child of the earlier resource its parent: key
// names, or checks that a resource without parent: uses no parent value.
// It returns the problems, each naming the resource.
func linkParent(name string, f fanout, job *idsync.Job, earlier []Resource) []string {
	if f.parent == nil {
		var p []string
		if f.rows != nil || f.conc != nil {
			at := f.rows
			if at == nil {
				at = f.conc
			}
			p = append(p, fmt.Sprintf("line %d: resource %s: parent_rows and fanout_concurrency: only with parent", at.Line, name))
		}
		return append(p, orphanRefs(job, "resource "+name+": ")...)
	}
	var p []string
	bad := func(at *yaml.Node, key, format string, args ...any) {
		p = append(p, fmt.Sprintf("line %d: resource %s: %s: %s", at.Line, name, key, fmt.Sprintf(format, args...)))
	}
	spec := &idsync.ParentSpec{Resource: f.parent.Value, Rows: idsync.ParentRowsChanged, Concurrency: 1}
	i := slices.IndexFunc(earlier, func(r Resource) bool { return r.Name == f.parent.Value })
	if i < 0 {
		names := make([]string, len(earlier))
		for k, r := range earlier {
			names[k] = r.Name
		}
		bad(f.parent, "parent", "%q is not an earlier resource of the file (%s)", f.parent.Value, strings.Join(names, ", "))
		return p
	}
	if f.rows != nil {
		spec.Rows = f.rows.Value
		if !slices.Contains(idsync.ParentRowsModes, spec.Rows) {
			bad(f.rows, "parent_rows", "%q is not one of %s", f.rows.Value, strings.Join(idsync.ParentRowsModes, ", "))
		}
	}
	if f.conc != nil {
		n, err := strconv.Atoi(f.conc.Value)
		if err != nil || n < 1 {
			bad(f.conc, "fanout_concurrency", "%s: want a whole number of at least 1", f.conc.Value)
		}
		spec.Concurrency = n
	}
	par := earlier[i].Job
	spec.Name, spec.URL = par.Name, par.Target.URL
	spec.Table = par.Table
	spec.Table.Columns = slices.Clone(par.Table.Columns)
	job.Parent = spec
	return append(p, childProblems(job, "resource "+name+": ")...)
}

// childProblems checks a child job against its parent: the same database,
// no incremental block, no walk that keeps a mark, every parent column it
// names in the parent's table (when the parent declares its columns); it
// gives {parent: COL} columns without a type the parent column's type.
func childProblems(job *idsync.Job, prefix string) []string {
	par := job.Parent
	var p []string
	bad := func(key, format string, args ...any) {
		p = append(p, prefix+key+": "+fmt.Sprintf(format, args...))
	}
	if job.Target.URL != par.URL {
		bad("target.url", "a child resource writes to its parent's database (it reads the parent's table %s there): give it the parent's target.url, or set it once in defaults", par.Table.String())
	}
	if job.Incremental != nil {
		bad("incremental", "a child resource is walked whole for each parent: parent_rows: changed keeps it incremental (only the parents written since its last completed run are walked)")
	}
	if job.Pagination.Style == paging.StyleHWM {
		bad("pagination.style", "hwm keeps one mark per resource: a child resource's walk starts at the first page for each parent")
	}
	if job.Pagination.Continue {
		bad("pagination.continue", "a child resource's walk starts at the first page for each parent")
	}
	if err := idsync.CheckParentBody(job.Source.Body); err != nil {
		bad("source.body", "%v", err)
	}
	known := func(col string) bool { return len(par.Table.Columns) == 0 || par.Table.Column(col) != nil }
	for _, col := range idsync.ParentRefs(&job.Source) {
		if !known(col) {
			bad("source", "{parent.%s}: the parent's table %s has no column %s", col, par.Table.String(), col)
		}
	}
	for i := range job.Table.Columns {
		c := &job.Table.Columns[i]
		if c.Parent == "" {
			continue
		}
		if !known(c.Parent) {
			bad("target.columns."+c.Name, "{parent: %s}: the parent's table %s has no column %s", c.Parent, par.Table.String(), c.Parent)
		}
		if c.Type == "" {
			c.Type = contract.TypeText
			if pc := par.Table.Column(c.Parent); pc != nil {
				c.Type = pc.Type
			}
		}
	}
	childKeyTypes(&job.Table) // children.go: a {parent: COL} key column's type is known now
	return p
}

// orphanRefs returns a problem for each parent value a job without parent
// uses: {parent.COL} in its source, {parent: COL} columns.
func orphanRefs(job *idsync.Job, prefix string) []string {
	var p []string
	for _, col := range idsync.ParentRefs(&job.Source) {
		p = append(p, fmt.Sprintf("%ssource: {parent.%s} is only used in a resource with a parent", prefix, col))
	}
	for _, c := range job.Table.Columns {
		if c.Parent != "" {
			p = append(p, fmt.Sprintf("%starget.columns.%s: {parent: %s} is only used in a resource with a parent", prefix, c.Name, c.Parent))
		}
	}
	return p
}
