package cmd

import (
	"context"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// shownTable is one table show prints: the job's table or one of its
// child tables (docs/job-file.md, "Child tables").
type shownTable struct {
	table string
	cols  []string
	rows  [][]*string
}

// readShown reads the latest rows of t and of every child table under
// it, t first.
func readShown(ctx context.Context, target contract.Sink, t *contract.Table, limit int) ([]shownTable, error) {
	tables := []*contract.Table{t}
	for _, d := range t.Descendants() {
		tables = append(tables, &d.Table)
	}
	out := make([]shownTable, 0, len(tables))
	for _, tb := range tables {
		cols, rows, err := target.LatestRows(ctx, tb, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, shownTable{table: tb.String(), cols: cols, rows: rows})
	}
	return out, nil
}

// printChildren prints the child tables' rows after the job's table's.
func printChildren(ios *IOStreams, tables []shownTable) {
	for _, c := range tables {
		fmt.Fprintf(ios.Out, "\nchild table %s\n", c.table)
		printRows(ios, c.cols, c.rows)
	}
}

// childrenJSON is show --json's "children": each child table with its
// columns and latest rows, as the job's table is shown.
func childrenJSON(tables []shownTable) []map[string]any {
	out := make([]map[string]any, 0, len(tables))
	for _, c := range tables {
		rows := make([]map[string]*string, 0, len(c.rows))
		for _, r := range c.rows {
			o := make(map[string]*string, len(c.cols))
			for i, col := range c.cols {
				o[col] = r[i]
			}
			rows = append(rows, o)
		}
		out = append(out, map[string]any{"table": c.table, "columns": c.cols, "rows": rows})
	}
	return out
}
