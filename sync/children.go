package sync

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// mapChildren fills row.Children from rec's nested arrays, one set per
// child table of the mapper's table, and folds their hashes into
// row.Hash: the parent's content hash covers its arrays, so an unchanged
// parent has unchanged children and the sink skips both
// (docs/job-file.md, "Child tables").
func (m *Mapper) mapChildren(index int, rec gjson.Result, row *contract.Row) error {
	t := m.Table
	row.Children = make([][]contract.Row, len(t.Children))
	h := xxhash.New()
	_, _ = h.WriteString(row.Hash)
	key := keyValues(t, row.Values)
	for i := range t.Children {
		c := &t.Children[i]
		rows, err := m.elementRows(index, c, key, rec, c.Name)
		if err != nil {
			return err
		}
		row.Children[i] = rows
		hashChildren(h, c, rows)
	}
	row.Hash = strconv.FormatUint(h.Sum64(), 16)
	return nil
}

// hashChildren adds one child table's rows of a parent to h, after the
// child's name and its table's: rows written to another table (a child
// renamed in the job file) change the parent's hash, so the next run
// writes the parent and fills the new table, whose rows' own columns and
// hashes may be the old table's.
func hashChildren(h *xxhash.Digest, c *contract.Child, rows []contract.Row) {
	_, _ = h.WriteString(c.Name)
	_, _ = h.Write([]byte{0})
	_, _ = h.WriteString(c.Table.Name)
	_, _ = h.Write([]byte{0, byte(len(rows) >> 24), byte(len(rows) >> 16), byte(len(rows) >> 8), byte(len(rows))})
	for _, r := range rows {
		_, _ = h.WriteString(r.Hash)
		_, _ = h.Write([]byte{0})
	}
}

// keyValues returns the values of t's key columns of a row, in key order.
func keyValues(t *contract.Table, values []any) []any {
	out := make([]any, 0, len(t.Key))
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name == k {
				out = append(out, values[i])
				break
			}
		}
	}
	return out
}

// elementPlan is how a child table's elements are read: their columns
// (after the inherited key and position) in one walk over each element,
// as Map reads a record's (fields.go), and its hash with its own buffer.
type elementPlan struct {
	first int // the first column read from the element
	plan  *fieldPlan
	hm    *Mapper
}

// elementPlan returns t's plan, built on first use (and again if t's
// columns changed, as Map rebuilds the record's).
func (m *Mapper) elementPlan(t *contract.Table, inherited int) *elementPlan {
	if ep := m.kids[t]; ep != nil && ep.first+ep.plan.ncols == len(t.Columns) {
		return ep
	}
	first := inherited
	if first < len(t.Columns) && t.Columns[first].Name == contract.ColPos {
		first++
	}
	ep := &elementPlan{first: first, plan: newFieldPlan(&contract.Table{Columns: t.Columns[first:]}), hm: &Mapper{Table: t}}
	if m.kids == nil {
		m.kids = map[*contract.Table]*elementPlan{}
	}
	m.kids[t] = ep
	return ep
}

// elementRows maps the elements of the array at c.Path in parent (a record
// or an element) to rows of c's table: the parent's key values first
// (inherited), then the element's position when the table is keyed by it,
// then the element's columns. where names the array for a bad record
// (line_items[3].taxes). A value at c.Path that is not an array, an
// element value its column cannot take, or an element key that is missing
// makes the whole record bad. Elements repeating a key keep the last, with
// its own arrays only (docs/job-file.md, "Child tables").
func (m *Mapper) elementRows(index int, c *contract.Child, inherited []any, parent gjson.Result, where string) ([]contract.Row, error) {
	arr := parent.Get(c.Path)
	if !arr.Exists() || arr.Type == gjson.Null {
		// A path through an array (assignees.#.login) finds nothing when
		// that array is not one: an object or a string there is not a
		// missing array, and must not empty the parent's child rows.
		if i := strings.Index(c.Path, ".#."); i > 0 {
			if a := parent.Get(c.Path[:i]); a.Exists() && a.Type != gjson.Null && !a.IsArray() {
				return nil, &contract.BadRecord{Index: index, Column: where, Reason: fmt.Sprintf("child table %s: want an array at %s (of path %s), got %s", c.Table.Name, c.Path[:i], c.Path, describe(a))}
			}
		}
		return nil, nil
	}
	if !arr.IsArray() {
		return nil, &contract.BadRecord{Index: index, Column: where, Reason: fmt.Sprintf("child table %s: want an array at %s, got %s", c.Table.Name, c.Path, describe(arr))}
	}
	t := &c.Table
	ep := m.elementPlan(t, len(inherited))
	first, hm := ep.first, ep.hm
	elems := arr.Array()
	rows := make([]contract.Row, 0, len(elems))
	for pos, el := range elems {
		at := where + "[" + strconv.Itoa(pos) + "]"
		vals := make([]any, len(t.Columns))
		copy(vals, inherited)
		if first > len(inherited) {
			vals[len(inherited)] = int64(pos)
		}
		read := ep.plan.read(el, t.Columns[first:])
		for i := first; i < len(t.Columns); i++ {
			col := &t.Columns[i]
			v, err := Convert(read[i-first], col.Type)
			if err != nil {
				return nil, &contract.BadRecord{Index: index, Column: at + "." + col.Name, Reason: fmt.Sprintf("child table %s: %v", t.Name, err)}
			}
			vals[i] = v
		}
		for _, k := range t.Key {
			for i := first; i < len(t.Columns); i++ {
				if t.Columns[i].Name == k && vals[i] == nil {
					return nil, &contract.BadRecord{Index: index, Column: at + "." + k, Reason: fmt.Sprintf("child table %s: element key is missing or null (path %s)", t.Name, t.Columns[i].Path)}
				}
			}
		}
		r := contract.Row{Values: vals, Hash: hm.hash(vals)}
		if len(t.Children) > 0 {
			h := xxhash.New()
			_, _ = h.WriteString(r.Hash)
			r.Children = make([][]contract.Row, len(t.Children))
			key := keyValues(t, vals)
			for j := range t.Children {
				gc := &t.Children[j]
				sub, err := m.elementRows(index, gc, key, el, at+"."+gc.Name)
				if err != nil {
					return nil, err
				}
				r.Children[j] = sub
				hashChildren(h, gc, sub)
			}
			r.Hash = strconv.FormatUint(h.Sum64(), 16)
		}
		rows = append(rows, r)
	}
	if len(t.Children) > 0 && first == len(inherited) {
		// Two elements with one key keep the last, and only its arrays:
		// the sinks keep the last row of a key, but the grandchild rows
		// of the one dropped would be written under the kept one.
		rows, _ = contract.Dedupe(t, rows)
	}
	return rows, nil
}

// checkChildren runs v on every child row of r, at every depth: a value
// the target would refuse in a child table makes the parent's record bad,
// like one in its own columns. The column is named with its child table
// and the element's key (order_lines.sku (orders_id=7, id=3)).
func checkChildren(v contract.RowValidator, t *contract.Table, r contract.Row) error {
	for i := range t.Children {
		if i >= len(r.Children) {
			break
		}
		c := &t.Children[i]
		for _, cr := range r.Children[i] {
			if err := v.CheckRow(&c.Table, cr); err != nil {
				var bad *contract.BadRecord
				if !errors.As(err, &bad) {
					bad = &contract.BadRecord{Reason: err.Error()}
				}
				bad.Column = fmt.Sprintf("%s.%s (%s)", c.Table.Name, bad.Column, describeKey(&c.Table, cr))
				return bad
			}
			if err := checkChildren(v, &c.Table, cr); err != nil {
				return err
			}
		}
	}
	return nil
}
