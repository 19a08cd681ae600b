// Package schema generates the JSON Schema of idemsync's job file from the
// Go types the loader decodes (spec.Spec), so the two cannot drift apart:
// keys, nesting, and required keys (the `jsonschema:"required"` tags) come
// from the types; descriptions, defaults, enums, ranges and patterns come
// from the loader's rule table (jobfile.Rules), the same rules the loader
// fills and checks; the pagination styles' rules from sync's style table.
//
// The schema describes the file as written, before ${VAR} expansion: every
// value that is not a plain string (integers, numbers, booleans, enums,
// durations, sizes) also accepts a string holding a ${VAR} or
// ${VAR:-default} reference, because that is what an editor sees. The loader
// checks the expanded value.
//
// job.schema.json beside this file is the committed output of JSON; a test
// fails when it is stale (regenerate with `go test ./schema -update` or
// `idemsync schema > schema/job.schema.json`).
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// Draft is the JSON Schema dialect of the generated schema. Draft-07 is the
// one editors (yaml-language-server, VS Code, JetBrains) support best.
const Draft = "http://json-schema.org/draft-07/schema#"

// ID is the schema's canonical address.
const ID = "https://raw.githubusercontent.com/idemsync/idemsync/main/schema/job.schema.json"

// EnvPattern matches a string holding a ${VAR} or ${VAR:-default} reference
// (unanchored: the reference may be part of the string).
const EnvPattern = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`

// Schema is one node of a JSON Schema (the draft-07 keywords idemsync needs).
// Fields marshal in declaration order, so the output is stable.
type Schema struct {
	Schema               string      `json:"$schema,omitempty"`
	ID                   string      `json:"$id,omitempty"`
	Ref                  string      `json:"$ref,omitempty"`
	Title                string      `json:"title,omitempty"`
	Description          string      `json:"description,omitempty"`
	Type                 string      `json:"type,omitempty"`
	Enum                 []any       `json:"enum,omitempty"`
	Const                any         `json:"const,omitempty"`
	Pattern              string      `json:"pattern,omitempty"`
	Minimum              *float64    `json:"minimum,omitempty"`
	Maximum              *float64    `json:"maximum,omitempty"`
	MinItems             *int        `json:"minItems,omitempty"`
	Default              any         `json:"default,omitempty"`
	Examples             []any       `json:"examples,omitempty"`
	Properties           *Properties `json:"properties,omitempty"`
	PropertyNames        *Schema     `json:"propertyNames,omitempty"`
	Required             []string    `json:"required,omitempty"`
	AdditionalProperties any         `json:"additionalProperties,omitempty"` // false or *Schema
	Items                *Schema     `json:"items,omitempty"`
	AnyOf                []*Schema   `json:"anyOf,omitempty"`
	OneOf                []*Schema   `json:"oneOf,omitempty"`
	AllOf                []*Schema   `json:"allOf,omitempty"`
	Not                  *Schema     `json:"not,omitempty"`
	If                   *Schema     `json:"if,omitempty"`
	Then                 *Schema     `json:"then,omitempty"`
	Definitions          *Properties `json:"definitions,omitempty"`
}

// Property is one named entry of Properties.
type Property struct {
	Name   string
	Schema *Schema
}

// Properties is an ordered JSON object of schemas (properties, definitions).
type Properties []Property

// Get returns the named schema, or nil.
func (p *Properties) Get(name string) *Schema {
	if p == nil {
		return nil
	}
	for _, e := range *p {
		if e.Name == name {
			return e.Schema
		}
	}
	return nil
}

// MarshalJSON writes the entries as one object, in order.
func (p Properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Job returns the job file's schema, built from spec.Spec.
func Job() *Schema {
	g := &generator{}
	root := g.object(reflect.TypeFor[spec.Spec](), "")
	root.Schema, root.ID = Draft, ID
	root.Title = "idemsync job file"
	root.Description = rules[""].Doc
	root.Definitions = &Properties{
		{Name: "env", Schema: &Schema{Type: "string", Pattern: EnvPattern,
			Description: "A ${VAR} or ${VAR:-default} reference, expanded from the environment before the value is checked."}},
	}
	*root.Definitions = append(*root.Definitions, Property{Name: "child", Schema: child()})
	addPaginationRules(root.Properties.Get("pagination"))
	g.addResources(root)
	strictSchema(root)
	return root
}

// JSON returns the job file's schema as indented JSON with a final newline:
// the content of schema/job.schema.json.
func JSON() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Job()); err != nil {
		panic(fmt.Sprintf("schema: encode: %v", err)) // static data: cannot happen
	}
	return b.Bytes()
}

const (
	// durationPattern is a non-negative Go duration (time.ParseDuration).
	durationPattern = `^\s*\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)\s*$`
	// sizePattern is a byte size (spec.ParseByteSize).
	sizePattern = `^\s*[0-9]+\s*(KiB|MiB|GiB|KB|MB|GB|K|M|G|B)?\s*$`
)

// rules are the job file's rules, read once.
var rules = jobfile.Rules()

type generator struct{}

// object builds the schema of a struct type: one property per yaml/json
// key, required keys from the jsonschema tag, no other key allowed.
func (g *generator) object(t reflect.Type, path string) *Schema {
	s := &Schema{Type: "object", Properties: &Properties{}, AdditionalProperties: false}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := join(path, name)
		ps := g.value(f.Type, key)
		d, ok := rules[key]
		if !ok {
			panic("schema: no rule for " + key + " in jobfile/rules.go")
		}
		ps.Description = d.Doc
		if d.Default != nil {
			ps.Default = d.Default
		}
		ps.Examples = d.Examples
		*s.Properties = append(*s.Properties, Property{Name: name, Schema: ps})
		if slicesContains(strings.Split(f.Tag.Get("jsonschema"), ","), "required") {
			s.Required = append(s.Required, name)
		}
	}
	return s
}

// value builds the schema of one key's value from its Go type and the
// constraints of its rule (the loader's), with the ${VAR} alternative for
// every value that is not a free string.
func (g *generator) value(t reflect.Type, key string) *Schema {
	if o, ok := shapes[key]; ok {
		return o()
	}
	if r := rules[key]; len(r.Enum) > 0 || r.Min != nil || r.Max != nil || r.Pattern != "" {
		return constrained(t, r)
	}
	switch t {
	case reflect.TypeFor[spec.Duration]():
		return withEnv(&Schema{Type: "string", Pattern: durationPattern})
	case reflect.TypeFor[spec.ByteSize]():
		return withEnv(&Schema{Type: "integer", Minimum: num(1)}, &Schema{Type: "string", Pattern: sizePattern})
	case reflect.TypeFor[spec.Columns]():
		return columns()
	case reflect.TypeFor[contract.ColumnType]():
		return columnType()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.value(t.Elem(), key)
	case reflect.Struct:
		return g.object(t, key)
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Bool:
		return withEnv(&Schema{Type: "boolean"})
	case reflect.Int, reflect.Int64:
		return withEnv(&Schema{Type: "integer", Minimum: num(0)})
	case reflect.Float64:
		return withEnv(&Schema{Type: "number", Minimum: num(0)})
	case reflect.Map:
		// Mapping of strings; YAML numbers and booleans are read as their text.
		if t.Elem() == reflect.TypeFor[spec.QueryValue]() {
			// A list repeats the key.
			return &Schema{Type: "object", AdditionalProperties: &Schema{AnyOf: append(scalarText().AnyOf, &Schema{Type: "array", Items: scalarText()})}}
		}
		return &Schema{Type: "object", AdditionalProperties: scalarText()}
	case reflect.Slice:
		item := g.value(t.Elem(), key+"[]")
		list := &Schema{Type: "array", Items: item}
		if t.Elem().Kind() == reflect.String {
			// The loader reads `key: id` as `key: [id]`.
			list.MinItems = intp(1)
			return &Schema{AnyOf: []*Schema{item, list}}
		}
		return list
	}
	panic(fmt.Sprintf("schema: no mapping for %s (%s)", key, t))
}

// withEnv accepts any of alts or a ${VAR} reference.
func withEnv(alts ...*Schema) *Schema {
	return &Schema{AnyOf: append(alts, &Schema{Ref: "#/definitions/env"})}
}

// scalarText accepts any YAML scalar the loader reads as a string.
func scalarText() *Schema {
	return &Schema{AnyOf: []*Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}}}
}

// child is the schema of one entry of target.children, whose own
// children refer back to it.
func child() *Schema {
	doc := func(k string) string { return rules["target.children.*."+k].Doc }
	return &Schema{
		Type: "object", AdditionalProperties: false, Required: []string{"path", "table", "columns"},
		Properties: &Properties{
			{Name: "path", Schema: &Schema{Type: "string", Description: doc("path")}},
			{Name: "table", Schema: &Schema{Type: "string", Description: doc("table")}},
			{Name: "key", Schema: &Schema{Description: doc("key"), AnyOf: []*Schema{{Type: "string"}, {Type: "array", Items: &Schema{Type: "string"}, MinItems: intp(1)}}}},
			{Name: "columns", Schema: func() *Schema { s := columns(); s.Description = doc("columns"); return s }()},
			{Name: "children", Schema: &Schema{Type: "object", Description: doc("children"), AdditionalProperties: &Schema{Ref: "#/definitions/child"}}},
		},
	}
}

func columns() *Schema {
	col := &Schema{
		Type: "object", AdditionalProperties: false,
		Properties: &Properties{
			{Name: "path", Schema: &Schema{Type: "string", Description: rules["target.columns.*.path"].Doc}},
			{Name: "type", Schema: columnType()},
			{Name: "parent", Schema: &Schema{Type: "string", Description: rules["target.columns.*.parent"].Doc}},
		},
	}
	col.Properties.Get("type").Description = rules["target.columns.*.type"].Doc
	col.Properties.Get("type").Default = rules["target.columns.*.type"].Default
	return &Schema{
		Type:          "object",
		PropertyNames: &Schema{Not: &Schema{Pattern: "^_idemsync_"}},
		AdditionalProperties: &Schema{AnyOf: []*Schema{
			{Type: "string", Description: "Path of the value in each record."},
			col,
		}},
	}
}

func columnType() *Schema {
	return constrained(reflect.TypeFor[string](), rules["target.columns.*.type"])
}

// shapes are keys whose values take more than one form, beyond what their
// Go type says: marks written as numbers or timestamps, a signed start page.
var shapes = map[string]func() *Schema{
	"pagination.start":    func() *Schema { return withEnv(&Schema{Type: "integer"}) },
	"pagination.initial":  scalarText,
	"pagination.overlap":  overlap,
	"incremental.initial": scalarText,
	"incremental.overlap": overlap,
	// A boolean, a number or a string, compared with the record's value.
	"target.tombstone.value": scalarText,
	"target.children": func() *Schema {
		return &Schema{Type: "object", AdditionalProperties: &Schema{Ref: "#/definitions/child"}}
	},
	"source.body": func() *Schema {
		return &Schema{AnyOf: []*Schema{{Type: "string"}, {Type: "object"}, {Type: "array"}}}
	},
}

// constrained is the schema of a value of type t under rule r: its enum,
// range or pattern.
func constrained(t reflect.Type, r jobfile.Rule) *Schema {
	s := &Schema{Type: "string", Pattern: r.Pattern, Minimum: r.Min, Maximum: r.Max}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		s.Type = "integer"
	case reflect.Float64:
		s.Type = "number"
	}
	for _, v := range r.Enum {
		s.Enum = append(s.Enum, v)
	}
	return withEnv(s)
}

// overlap is a Go duration (timestamp marks) or a number (numeric marks).
func overlap() *Schema {
	return &Schema{AnyOf: []*Schema{
		{Type: "number", Minimum: num(0)},
		{Type: "string", Pattern: durationPattern},
		{Type: "string", Pattern: `^\s*[0-9]+(\.[0-9]+)?\s*$`},
		{Ref: "#/definitions/env"},
	}}
}

// addPaginationRules adds the keys a style requires, as the loader does
// (paging.FillPagination, from the style table).
func addPaginationRules(p *Schema) {
	when := func(styles []any, then *Schema) *Schema {
		cond := &Schema{Properties: &Properties{{Name: "style", Schema: &Schema{Enum: styles}}}, Required: []string{"style"}}
		return &Schema{If: cond, Then: then}
	}
	sized := &Schema{
		If:   &Schema{Required: []string{"size"}, Properties: &Properties{{Name: "size", Schema: &Schema{Not: &Schema{Const: 0}}}}},
		Then: &Schema{Required: []string{"size_param"}},
	}
	var withSize []any
	for _, r := range paging.StyleRules() {
		if len(r.Required) > 0 {
			p.AllOf = append(p.AllOf, when([]any{r.Name}, &Schema{Required: r.Required}))
		}
		if len(r.OneOf) > 0 {
			one := &Schema{}
			for _, k := range r.OneOf {
				one.OneOf = append(one.OneOf, &Schema{Required: []string{k}})
			}
			p.AllOf = append(p.AllOf, when([]any{r.Name}, one))
		}
		if r.SizeNeedsParam {
			withSize = append(withSize, r.Name)
		}
	}
	p.AllOf = append(p.AllOf, when(withSize, sized))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func num(f float64) *float64 { return &f }
func intp(n int) *int        { return &n }

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if strings.TrimSpace(x) == v {
			return true
		}
	}
	return false
}
