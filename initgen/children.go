package initgen

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// initChild is a child table init proposes for a top-level field whose
// values on the first page are arrays of objects (docs/job-file.md,
// "Child tables").
type initChild struct {
	name, path, table string
	key               *initColumn // nil: keyed by position
	cols              []initColumn
}

// detectChildren proposes a child table for each column of cols whose
// non-null values on the page are all arrays, of objects only, at least
// one element in all: its columns typed from every element, its key the
// first id-like field unique among them (else the position).
func detectChildren(recs []gjson.Result, cols []initColumn, table string) []initChild {
	var out []initChild
	for _, c := range cols {
		var elems []gjson.Result
		arrays := true
		for _, r := range recs {
			v := r.Get(c.path)
			if !v.Exists() || v.Type == gjson.Null {
				continue
			}
			if !v.IsArray() {
				arrays = false
				break
			}
			for _, e := range v.Array() {
				if !e.IsObject() {
					arrays = false
					break
				}
				elems = append(elems, e)
			}
		}
		if !arrays || len(elems) == 0 {
			continue
		}
		ch := initChild{name: c.name, path: c.path, table: table + "_" + c.name, cols: detectColumns(elems)}
		if len(ch.cols) == 0 {
			continue // empty objects only: no column to make (the array stays in its json column)
		}
		if k, guessed := detectKey(elems, ch.cols, c.name); !guessed {
			ch.key = &k
		}
		out = append(out, ch)
	}
	return out
}

// writeChildren writes the proposed child tables under target.
func writeChildren(w func(format string, args ...any), children []initChild) {
	if len(children) == 0 {
		return
	}
	w("  # Arrays of objects on the first page, proposed as child tables: each element a row\n")
	w("  # keyed by the parent's key and its own (docs/job-file.md, \"Child tables\"); delete\n")
	w("  # those you do not want (the array stays in its json column above).\n")
	w("  children:\n")
	for _, c := range children {
		w("    %s:\n", c.name)
		w("      path: %s\n", yamlString(c.path))
		w("      table: %s\n", c.table)
		if c.key != nil {
			w("      key: [%s]  # unique among the first page's elements\n", yamlString(c.key.name))
		} else {
			w("      # No id-like field is unique among the elements: rows are keyed by position.\n")
		}
		w("      columns:\n")
		for _, col := range c.cols {
			w("        %s: {path: %s, type: %s}\n", col.name, yamlString(col.path), col.typ)
		}
	}
}

// childNames lists the proposed child tables for init's summary.
func childNames(children []initChild) string {
	names := make([]string, len(children))
	for i, c := range children {
		names[i] = fmt.Sprintf("%s → %s", c.path, c.table)
	}
	return strings.Join(names, ", ")
}
