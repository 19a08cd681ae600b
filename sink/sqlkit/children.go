package sqlkit

import (
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// Tree is the child rows of some parent rows, gathered per child table
// at every depth (docs/job-file.md, "Child tables").
type Tree map[*contract.Child][]contract.Row

// GatherTree returns the child rows, at every depth, of the rows of t at
// the indexes idx.
func GatherTree(t *contract.Table, rows []contract.Row, idx []int) Tree {
	tree := Tree{}
	var walk func(t *contract.Table, r contract.Row)
	walk = func(t *contract.Table, r contract.Row) {
		for i := range t.Children {
			if i >= len(r.Children) {
				break
			}
			c := &t.Children[i]
			tree[c] = append(tree[c], r.Children[i]...)
			for _, cr := range r.Children[i] {
				walk(&c.Table, cr)
			}
		}
	}
	for _, i := range idx {
		walk(t, rows[i])
	}
	return tree
}

// rootJoin is the condition joining the child table aliased "_c" to the
// root table aliased "_p" on the root's key.
func rootJoin(root *contract.Table, d *contract.Child) string {
	on := make([]string, len(root.Key))
	for i, k := range root.Key {
		on[i] = fmt.Sprintf(`"_p".%s = "_c".%s`, QuoteIdent(k), QuoteIdent(d.Root[i]))
	}
	return strings.Join(on, " AND ")
}

// OrphansSQL deletes the rows of descendant d of root whose root row is
// gone: what a hard sweep leaves behind.
func OrphansSQL(root *contract.Table, d *contract.Child) string {
	return fmt.Sprintf(`DELETE FROM %s AS "_c" WHERE NOT EXISTS (SELECT 1 FROM %s AS "_p" WHERE %s)`,
		QuoteTable(&d.Table), QuoteTable(root), rootJoin(root, d))
}

// MarkSQL marks, with their root row's own mark, the unmarked rows of
// descendant d of root whose root row is marked deleted: what a soft
// sweep leaves behind.
func MarkSQL(root *contract.Table, d *contract.Child) string {
	del := QuoteIdent(contract.ColDeletedAt)
	return fmt.Sprintf(`UPDATE %s AS "_c" SET %s = (SELECT "_p".%[2]s FROM %s AS "_p" WHERE %s) WHERE "_c".%[2]s IS NULL AND EXISTS (SELECT 1 FROM %[3]s AS "_p" WHERE %[4]s AND "_p".%[2]s IS NOT NULL)`,
		QuoteTable(&d.Table), del, QuoteTable(root), rootJoin(root, d))
}

// LeftSQL counts what OrphansSQL (MarkSQL on a soft root) left of
// descendant d of root: rows whose root row is gone (on a soft root: live
// rows whose root row is marked). After it ran, a row a trigger, rule or
// policy kept.
func LeftSQL(root *contract.Table, d *contract.Child) string {
	if root.Soft() {
		del := QuoteIdent(contract.ColDeletedAt)
		return fmt.Sprintf(`SELECT count(*) FROM %s AS "_c" WHERE "_c".%s IS NULL AND EXISTS (SELECT 1 FROM %s AS "_p" WHERE %s AND "_p".%[2]s IS NOT NULL)`,
			QuoteTable(&d.Table), del, QuoteTable(root), rootJoin(root, d))
	}
	return fmt.Sprintf(`SELECT count(*) FROM %s AS "_c" WHERE NOT EXISTS (SELECT 1 FROM %s AS "_p" WHERE %s)`,
		QuoteTable(&d.Table), QuoteTable(root), rootJoin(root, d))
}
