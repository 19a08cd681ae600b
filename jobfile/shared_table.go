package jobfile

import (
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// sharedTables returns a problem for each pair of resources of one file
// writing one table of one target when either deletes rows it did not
// see (target.deletes soft or hard): each would delete the other's rows
// (docs/deletions.md, "One writer per swept table"). The target database
// refuses such writers too, whatever file they come from; this says so
// before anything runs, in validate as well.
func sharedTables(rs []Resource) []string {
	var problems []string
	for i, a := range rs {
		for _, b := range rs[:i] {
			ta, tb := &a.Job.Target, &b.Job.Target
			if ta.URL != tb.URL || a.Job.Table.String() != b.Job.Table.String() {
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

// sweeps reports whether deletes removes or marks unseen rows.
func sweeps(deletes string) bool {
	return deletes == contract.DeletesSoft || deletes == contract.DeletesHard
}
