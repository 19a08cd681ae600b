package jobfile

import (
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// targetChildren checks target.children and adds a contract.Child to the
// target table for each, nested as written (docs/job-file.md, "Child
// tables"). A child's table starts with its parent's key columns
// (contract.ChildKeyName) and is keyed by them plus the element's key, or
// its position when it has none.
func (j loading) targetChildren(bad func(key, format string, args ...any), lines map[string]int) {
	t := &j.Target
	if len(t.Children) == 0 {
		return
	}
	if j.Infer {
		bad("target.children", "needs target.columns: the child tables carry the parent's key columns, whose types must be declared")
		return
	}
	if t.Version != "" {
		bad("target.children", "cannot be combined with target.version: a stale record's arrays would replace the stored row's child rows")
		return
	}
	tables := map[string]string{strings.ToLower(j.Table.Name): "target.table"}
	j.Table.Children = childTables(&j.Table, 0, len(j.Table.Key), t.Children, tables, bad, lines)
}

// childTables builds the children of parent, whose first inherited
// columns are its own parent's key; rootKey is how many columns hold the
// root table's key in every descendant.
func childTables(parent *contract.Table, inherited, rootKey int, specs spec.Children, tables map[string]string, bad func(key, format string, args ...any), lines map[string]int) []contract.Child {
	var out []contract.Child
	for _, cs := range specs {
		at := cs.Where
		if cs.Line > 0 {
			lines[at] = cs.Line
		}
		for k, l := range cs.Lines {
			lines[at+"."+k] = l
		}
		if cs.Path == "" {
			bad(at+".path", "is required (the GJSON path of the array in the parent's record)")
		}
		if cs.Table == "" {
			bad(at+".table", "is required")
		} else if prev, ok := tables[strings.ToLower(cs.Table)]; ok {
			bad(at+".table", "%q is already the table of %s", cs.Table, prev)
		} else {
			tables[strings.ToLower(cs.Table)] = at + ".table"
		}
		if len(cs.Columns) == 0 {
			bad(at+".columns", "is required (the element's columns, paths relative to the element; @this for an array of scalars)")
		}
		c := contract.Child{Name: cs.Name, Path: cs.Path, Table: contract.Table{
			Schema: parent.Schema, Name: cs.Table, Create: parent.Create, Deletes: parent.Deletes,
		}}
		names := map[string]bool{}
		for _, k := range parent.Key {
			pc := parent.Column(k)
			if pc == nil {
				continue // reported by targetColumns
			}
			name := contract.ChildKeyName(parent, k, inherited)
			if names[name] {
				// Only a table's own key can meet an inherited name, so the
				// table to rename is the parent, a child table itself.
				bad(at[:strings.LastIndex(at, ".children.")]+".table", "%q: its key column %s and a column it inherited would both be column %q of its child table %s", parent.Name, k, name, cs.Table)
			}
			names[name] = true
			c.Table.Columns = append(c.Table.Columns, contract.Column{Name: name, Type: pc.Type})
			c.Table.Key = append(c.Table.Key, name)
		}
		c.Root = append([]string(nil), c.Table.Key[:min(rootKey, len(c.Table.Key))]...)
		own := len(c.Table.Columns)
		if len(cs.Key) == 0 {
			c.Table.Columns = append(c.Table.Columns, contract.Column{Name: contract.ColPos, Type: contract.TypeInteger})
			c.Table.Key = append(c.Table.Key, contract.ColPos)
		}
		for _, col := range cs.Columns {
			key := at + ".columns." + col.Name
			if col.Line > 0 {
				lines[key] = col.Line
			}
			switch {
			case col.Name == "" || strings.HasPrefix(col.Name, "_idemsync_"):
				bad(key, "invalid column name (the _idemsync_ prefix is reserved)")
			case names[col.Name] && col.Parent == "":
				bad(key, "duplicate column (the parent's key columns are named %s)", strings.Join(c.Table.Key[:own], ", "))
			case col.Parent != "":
				bad(key, "parent: is for a child resource's columns; a child table carries its parent's key by itself")
			}
			names[col.Name] = true
			if col.Path == "" {
				col.Path = col.Name
			}
			if col.Type == "" {
				col.Type = contract.TypeText
			}
			if !col.Type.Valid() {
				bad(key+".type", "%q is not one of %v", col.Type, contract.ColumnTypes)
			}
			c.Table.Columns = append(c.Table.Columns, contract.Column{Name: col.Name, Path: col.Path, Type: col.Type})
		}
		for _, k := range cs.Key {
			if c.Table.Column(k) == nil || slices.Contains(c.Table.Key, k) {
				bad(at+".key", "column %q is not in %s.columns", k, at)
				continue
			}
			c.Table.Key = append(c.Table.Key, k)
		}
		c.Table.Children = childTables(&c.Table, own, rootKey, cs.Children, tables, bad, lines)
		out = append(out, c)
	}
	return out
}

// childKeyTypes gives the columns that carry a parent's key in its child
// tables, at every depth, the type of the parent's column: a key column
// taking its value from a fan-out parent ({parent: COL}) is typed only
// when the resources are linked (linkParent), after targetChildren.
func childKeyTypes(t *contract.Table) {
	for i := range t.Children {
		c := &t.Children[i]
		for k, name := range t.Key {
			if k < len(c.Table.Columns) && c.Table.Columns[k].Type == "" {
				if pc := t.Column(name); pc != nil {
					c.Table.Columns[k].Type = pc.Type
				}
			}
		}
		childKeyTypes(&c.Table)
	}
}
