package spec

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Children is the ordered target.children mapping (docs/job-file.md,
// "Child tables"): one child table per nested array, in the order written.
type Children []ChildSpec

// ChildSpec is one entry of target.children (or of a child's children).
type ChildSpec struct {
	Name string `json:"-"`
	// Path is the GJSON path of the array in the parent's record.
	Path string `json:"path"`
	// Table is the child table's name.
	Table string `json:"table"`
	// Key names the columns that identify an element within its parent's
	// array; empty, the element's position does (contract.ColPos).
	Key []string `json:"key,omitempty"`
	// Columns are the element's columns, paths relative to the element.
	Columns  Columns  `json:"columns"`
	Children Children `json:"children,omitempty"`
	// Line is the line of the child's name; Where its dotted key
	// (target.children.line_items.children.taxes).
	Line  int    `json:"-"`
	Where string `json:"-"`
	// Lines holds the line of each key the child sets.
	Lines map[string]int `json:"-"`
}

// UnmarshalYAML keeps the order the user wrote the children in and
// refuses unknown keys, naming their line.
func (c *Children) UnmarshalYAML(n *yaml.Node) error {
	return c.decode(n, "target.children")
}

func (c *Children) decode(n *yaml.Node, where string) error {
	if n.Kind != yaml.MappingNode {
		return fieldError("line %d: %s must be a mapping of child name to {path, table, key, columns, children}", n.Line, where)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := where + "." + k.Value
		ch := ChildSpec{Name: k.Value, Line: k.Line, Where: at, Lines: map[string]int{}}
		if v.Kind != yaml.MappingNode {
			return fieldError("line %d: %s must be a mapping with path, table, key, columns, children", v.Line, at)
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			ck, cv := v.Content[j], v.Content[j+1]
			var err error
			ch.Lines[ck.Value] = ck.Line
			switch ck.Value {
			case "path", "table":
				if cv.Kind != yaml.ScalarNode {
					return fieldError("line %d: %s.%s must be a string", cv.Line, at, ck.Value)
				}
				if ck.Value == "path" {
					ch.Path = cv.Value
				} else {
					ch.Table = cv.Value
				}
			case "key":
				switch cv.Kind {
				case yaml.ScalarNode:
					ch.Key = []string{cv.Value}
				case yaml.SequenceNode:
					err = cv.Decode(&ch.Key)
				default:
					err = fmt.Errorf("must be a column name or a list of them")
				}
			case "columns":
				err = ch.Columns.UnmarshalYAML(cv)
			case "children":
				err = ch.Children.decode(cv, at+".children")
			default:
				return fieldError("line %d: unknown key %s.%s (want path, table, key, columns or children)", ck.Line, at, ck.Value)
			}
			if err != nil {
				if _, ok := err.(*yaml.TypeError); ok {
					return err
				}
				return fieldError("line %d: %s.%s %v", ck.Line, at, ck.Value, err)
			}
		}
		*c = append(*c, ch)
	}
	return nil
}
