package schema

import (
	"reflect"
	"slices"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// addResources lets root describe a file with several resources
// (docs/job-file.md, "Several resources in one file"): defaults: and resources:
// beside name, state and retention, in place of a top-level source and target.
// A resource and defaults take every job key but name, state and retention,
// none of them required (defaults fill them in, and the loader checks each
// merged resource), plus source.base_url and source.path; a resource adds its
// name and the keys of a child: parent, parent_rows, fanout_concurrency.
func (g *generator) addResources(root *Schema) {
	partial := func() *Schema {
		s := g.object(reflect.TypeFor[spec.Spec](), "")
		*s.Properties = slices.DeleteFunc(*s.Properties, func(p Property) bool {
			return p.Name == "name" || p.Name == "state" || p.Name == "retention"
		})
		optional(s)
		src := s.Properties.Get("source")
		*src.Properties = append(*src.Properties,
			Property{Name: "base_url", Schema: &Schema{Type: "string", Description: rules["source.base_url"].Doc}},
			Property{Name: "path", Schema: &Schema{Type: "string", Description: rules["source.path"].Doc}})
		return s
	}
	defaults := partial()
	defaults.Description = rules["defaults"].Doc
	item := partial()
	*item.Properties = append(Properties{
		{Name: "name", Schema: &Schema{Type: "string", Pattern: `^[A-Za-z0-9_-]+$`, Description: "Required. The resource's name, unique in the file; its state is kept as JOB.NAME."}},
		{Name: "parent", Schema: &Schema{Type: "string", Description: "Makes the resource a child of an earlier resource of the file: walked once per row of that resource's target table (same database)."}},
		{Name: "parent_rows", Schema: withEnv(&Schema{Type: "string", Enum: []any{idsync.ParentRowsChanged, idsync.ParentRowsAll}})},
		{Name: "fanout_concurrency", Schema: withEnv(&Schema{Type: "integer", Minimum: num(1)})},
	}, *item.Properties...)
	item.Properties.Get("parent_rows").Description = "With parent: changed walks the parent rows written since the child's last completed run began; all walks every one."
	item.Properties.Get("parent_rows").Default = idsync.ParentRowsChanged
	item.Properties.Get("fanout_concurrency").Description = "With parent: children of up to this many parents walked at once."
	item.Properties.Get("fanout_concurrency").Default = 1
	item.Required = []string{"name"}
	*root.Properties = append(*root.Properties,
		Property{Name: "defaults", Schema: defaults},
		Property{Name: "resources", Schema: &Schema{Type: "array", MinItems: intp(1), Items: item, Description: rules["resources"].Doc}})
	// name, and either source and target or resources (not both sources)
	root.Required = slices.DeleteFunc(root.Required, func(k string) bool { return k == "source" || k == "target" })
	root.OneOf = []*Schema{
		{Required: []string{"source", "target"}, Not: &Schema{Required: []string{"resources"}}},
		{Required: []string{"resources"}, Not: &Schema{AnyOf: []*Schema{{Required: []string{"source"}}, {Required: []string{"target"}}}}},
	}
}

// optional removes every required key from s and the objects under it.
func optional(s *Schema) {
	if s == nil {
		return
	}
	s.Required = nil
	if s.Properties != nil {
		for _, p := range *s.Properties {
			optional(p.Schema)
		}
	}
	for _, a := range s.AnyOf {
		optional(a)
	}
	optional(s.Items)
}
