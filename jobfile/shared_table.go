package jobfile

import (
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// sharedTables returns a problem for each pair of resources of one file
// writing one table of one target when either deletes rows it did not
// see (target.deletes soft or hard): each would delete the other's rows
// (docs/deletions.md, "One writer per swept table"). The target database
// refuses such writers too, whatever file they come from; this says so
// before anything runs, in validate as well.
//
// A child table (target.children) has one writer, its parent resource,
// whatever the deletes: its rows are the parent records' arrays, deleted
// and rewritten with their parent row, and removed by the parent's sweep
// when their parent row is gone (docs/job-file.md, "Child tables"), so
// another resource's rows there would be deleted too.
func sharedTables(rs []Resource) []string {
	var problems []string
	for i, a := range rs {
		for _, b := range rs[:i] {
			ta, tb := &a.Job.Target, &b.Job.Target
			if ta.URL != tb.URL {
				continue
			}
			if p := sharedChild(b, a); p != "" {
				problems = append(problems, p)
				continue
			}
			if tableKey(a, a.Job.Table.String()) != tableKey(b, b.Job.Table.String()) {
				continue
			}
			if !sweeps(ta.Deletes) && !sweeps(tb.Deletes) {
				continue
			}
			problems = append(problems, fmt.Sprintf("resources %s and %s both write table %s, and a table whose rows a resource deletes (target.deletes: soft or hard) must have no other writer: give one of them its own target.table, or deletes: keep to both",
				b.Name, a.Name, a.Job.Table.String()))
		}
	}
	return problems
}

// sharedChild returns a problem when resources a and b (of one target)
// both write a table that is a child table (target.children) of either.
func sharedChild(a, b Resource) string {
	tables := func(r Resource) map[string]bool { // table → a child table of r
		m := map[string]bool{tableKey(r, r.Job.Table.String()): false}
		for _, d := range r.Job.Table.Descendants() {
			m[tableKey(r, d.Table.String())] = true
		}
		return m
	}
	ta, tb := tables(a), tables(b)
	for name, childA := range ta {
		childB, ok := tb[name]
		if !ok || !childA && !childB {
			continue
		}
		owner := a.Name
		if !childA {
			owner = b.Name
		}
		return fmt.Sprintf("resources %s and %s both write table %s, a child table of resource %s (target.children): a child table's rows are its parent records' arrays, deleted and rewritten with them and swept with their parent, so it must have no other writer: give the other resource its own target.table",
			a.Name, b.Name, name, owner)
	}
	return ""
}

// tableKey is the name of a table of r's target as its database compares
// names: SQLite without regard to ASCII case (orders and ORDERS are one
// table there), PostgreSQL as written (idemsync quotes every name).
func tableKey(r Resource, name string) string {
	if !strings.HasPrefix(r.Job.Target.URL, "sqlite:") {
		return name
	}
	return sqlkit.ASCIILower(name)
}

// sweeps reports whether deletes removes or marks unseen rows.
func sweeps(deletes string) bool {
	return deletes == contract.DeletesSoft || deletes == contract.DeletesHard
}
