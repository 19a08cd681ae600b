package sync

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// fieldPlan reads a record's columns in one pass over the record instead
// of one gjson.Get per column, each of which scans the record from its
// start (issue 31: mapping was 18–26% of a run's CPU). A column whose path
// is plain names (letters, digits, '_', '-', '$', dot-separated) is found
// by its first name among the record's top-level keys; the rest of its
// path, if any, is read from that value with gjson.Get as before. Every
// other column (a gjson pattern, modifier, escape or array query, or a
// parent column) is read with gjson.Get. As gjson.Get does, the first
// occurrence of a key wins.
type fieldPlan struct {
	ncols  int
	first  map[string]int // top-level name → index in groups
	groups []fieldGroup
	other  []int // columns read with gjson.Get
	// after[g] is the group whose name followed group g's among the
	// previous record's keys (after[len(groups)]: the first one): records
	// of an API list their keys in one order, so the next key is looked
	// for there before the map (docs/performance.md, "Round six: the
	// mapping").
	after []int
	// per record, reused
	found []bool
	vals  []gjson.Result
}

// fieldGroup is the columns whose path starts with one top-level name.
type fieldGroup struct {
	name  string
	cols  []int
	rests []string // the path after the first name ("" for the name itself)
}

func newFieldPlan(t *contract.Table) *fieldPlan {
	p := &fieldPlan{ncols: len(t.Columns), first: map[string]int{}, vals: make([]gjson.Result, len(t.Columns))}
	for i, c := range t.Columns {
		if c.Parent != "" {
			continue // parentValue
		}
		if !plainPath(c.Path) {
			p.other = append(p.other, i)
			continue
		}
		name, rest, _ := strings.Cut(c.Path, ".")
		g, ok := p.first[name]
		if !ok {
			g = len(p.groups)
			p.first[name] = g
			p.groups = append(p.groups, fieldGroup{name: name})
		}
		p.groups[g].cols = append(p.groups[g].cols, i)
		p.groups[g].rests = append(p.groups[g].rests, rest)
	}
	p.found = make([]bool, len(p.groups))
	p.after = make([]int, len(p.groups)+1)
	return p
}

// plainPath reports whether a gjson path is only plain names separated by
// dots, which gjson reads as the object keys of those names.
func plainPath(path string) bool {
	if path == "" {
		return false
	}
	for _, name := range strings.Split(path, ".") {
		if name == "" {
			return false
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '$') {
				return false
			}
		}
	}
	return true
}

// read returns the value of every column of rec (the zero Result for a
// parent column, read by parentValue). The slice is reused by the next
// call.
func (p *fieldPlan) read(rec gjson.Result, cols []contract.Column) []gjson.Result {
	if !rec.IsObject() {
		// gjson.Get reads a plain path of an array as indexes, and of a
		// scalar as nothing: leave it to gjson.
		clear(p.vals)
		for i, c := range cols {
			if c.Parent == "" {
				p.vals[i] = rec.Get(c.Path)
			}
		}
		return p.vals
	}
	if len(p.groups) > 0 {
		clear(p.found)
		left, prev := len(p.groups), len(p.groups)
		rec.ForEach(func(k, v gjson.Result) bool {
			g := p.after[prev]
			if p.groups[g].name != k.Str {
				var ok bool
				if g, ok = p.first[k.Str]; !ok {
					return true
				}
			}
			if p.found[g] {
				return true
			}
			p.found[g] = true
			p.after[prev], prev = g, g
			grp := &p.groups[g]
			for j, i := range grp.cols {
				if grp.rests[j] == "" {
					p.vals[i] = v
				} else {
					p.vals[i] = v.Get(grp.rests[j])
				}
			}
			left--
			return left > 0
		})
		if left > 0 {
			// The columns of names the record lacks are missing, not the
			// previous record's.
			for g := range p.groups {
				if !p.found[g] {
					for _, i := range p.groups[g].cols {
						p.vals[i] = gjson.Result{}
					}
				}
			}
		}
	}
	for _, i := range p.other {
		p.vals[i] = rec.Get(cols[i].Path)
	}
	return p.vals
}
