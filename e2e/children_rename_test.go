package e2e

import (
	"slices"
	"strings"
	"testing"
)

// childRows reads a child table's rows, by its key, as key|values.
func childRows(t *testing.T, tg childTarget, table, sel string) []string {
	t.Helper()
	db := tg.open(t)
	defer db.Close()
	rows, err := db.Query(`SELECT ` + sel + ` FROM ` + tg.tbl(table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A child table renamed in the job file (children.NAME.table), the
// source unchanged: the next run fills the new table with every parent's
// array, though no parent's record changed (docs/job-file.md, "Child
// tables"). The renamed tables are leaves (order_tags at depth one,
// order_line_discounts at depth two), whose rows' columns the rename
// leaves as they were.
func TestChildTableRenamedIsFilled(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			_, url, _, _ := childShop(t, 40, 5)
			body := childJob(url, tg, "keep", "")
			job := writeJob(t, dir, tg.name+"-rename.yaml", body)
			delRun(t, dir, 0, "run", job)
			childCheck(t, tg, "first load")
			tags := childRows(t, tg, "order_tags", `orders_id || '|' || _idemsync_pos || '|' || tag`)
			discounts := childRows(t, tg, "order_line_discounts", `orders_id || '|' || order_lines_id || '|' || _idemsync_pos || '|' || code`)
			if len(tags) == 0 || len(discounts) == 0 {
				t.Fatalf("the first load wrote %d tags and %d discounts: the test needs some of each", len(tags), len(discounts))
			}

			renamed := strings.NewReplacer("table: order_tags\n", "table: order_tags_v2\n", "table: order_line_discounts\n", "table: order_line_discounts_v2\n").Replace(body)
			if renamed == body {
				t.Fatal("the job file has no child table to rename")
			}
			writeJob(t, dir, tg.name+"-rename.yaml", renamed)
			delRun(t, dir, 0, "run", job, "--full")
			for _, c := range []struct {
				table, sel string
				want       []string
			}{
				{"order_tags_v2", `orders_id || '|' || _idemsync_pos || '|' || tag`, tags},
				{"order_line_discounts_v2", `orders_id || '|' || order_lines_id || '|' || _idemsync_pos || '|' || code`, discounts},
			} {
				if got := childRows(t, tg, c.table, c.sel); !slices.Equal(got, c.want) {
					t.Errorf("%s after the rename: %d rows, the arrays hold %d", c.table, len(got), len(c.want))
				}
			}
		})
	}
}
