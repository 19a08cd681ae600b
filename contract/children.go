package contract

import (
	"encoding/json"
	"fmt"
)

// ColPos is the bookkeeping column of a child table whose elements have
// no key of their own: the element's index in its parent's array, from 0
// (docs/job-file.md, "Child tables").
const ColPos = "_idemsync_pos"

// Child is one child table of a target table: the elements of an array
// of each parent record, one row each (docs/job-file.md, "Child tables").
// Its Table's first columns carry the parent row's key (named after the
// parent table, see ChildKeyName) and start its Key; the element's key (or
// ColPos) completes it. Its Deletes, Create and Schema are the parent's.
type Child struct {
	Table
	// Name is the child's name in target.children.
	Name string
	// Path is the GJSON path of the array in the parent's record (or
	// element).
	Path string
	// Root names, in order, this table's columns holding the root table's
	// key (the top-level target table's Key): every descendant row of one
	// root row shares these values, so a root row's whole tree is found,
	// replaced, deleted or marked by them.
	Root []string
}

// ChildKeyName is the name, in a child table of parent, of the parent's
// key column col: a column the parent itself inherited keeps its name,
// the parent's own key columns get the parent table's name as a prefix
// (orders.id → order_line_items.orders_id).
func ChildKeyName(parent *Table, col string, inherited int) string {
	for i := 0; i < inherited && i < len(parent.Columns); i++ {
		if parent.Columns[i].Name == col {
			return col
		}
	}
	return parent.Name + "_" + col
}

// Descendants returns every child table under t, depth first (a child
// before its own children).
func (t *Table) Descendants() []*Child {
	var out []*Child
	for i := range t.Children {
		c := &t.Children[i]
		out = append(out, c)
		out = append(out, c.Table.Descendants()...)
	}
	return out
}

// ChildCounts is what writes did to one child table: rows inserted, and
// rows deleted or, under deletes: soft, newly marked (docs/job-file.md,
// "Child tables"). A written parent's children are replaced, so a changed
// parent counts its old child rows as deleted and its new ones as
// inserted.
type ChildCounts struct {
	Inserted int64 `json:"inserted"`
	Deleted  int64 `json:"deleted"`
}

// AddChild adds inserted and deleted rows of the child table named table
// to c.Children; nothing is recorded for a table with neither.
func (c *Counts) AddChild(table string, inserted, deleted int64) {
	if inserted == 0 && deleted == 0 {
		return
	}
	if c.Children == nil {
		c.Children = map[string]ChildCounts{}
	}
	cc := c.Children[table]
	cc.Inserted += inserted
	cc.Deleted += deleted
	c.Children[table] = cc
}

// DecodeChildCounts reads the child counts a store keeps as a JSON object
// ({"order_lines": {"inserted": 3, "deleted": 1}}); "" and "{}" are nil.
func DecodeChildCounts(s string) (map[string]ChildCounts, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]ChildCounts
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("child table counts %q: %w", s, err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}
