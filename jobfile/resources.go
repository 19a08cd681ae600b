package jobfile

import (
	"fmt"
	"regexp"
	"strings"

	idsync "github.com/idemsync/idemsync/sync"

	"gopkg.in/yaml.v3"
)

// Resource is one endpoint of a job file: its name and its validated Job.
// A v1 file (source: at the top level) is one resource named after the job.
type Resource struct {
	Name string
	Job  *idsync.Job
}

// ResourceSep joins a job's name and a resource's name into the name that
// keys the resource's state (checkpoints, runs, pages, dead letters) in the
// state file: "shop.orders". A job name cannot contain it, so no resource's
// state can be taken for a v1 job's, and a v1 file keeps its job name as is.
const ResourceSep = "."

var resourceName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// LoadResources parses a job file with resources: and defaults: into one
// validated Job per resource, in file order: defaults are deep-merged under
// each resource (the resource's own keys win; lists are replaced, not
// merged), top-level keys other than defaults and resources (name, state,
// retention) apply to every resource. A file without resources: is one
// resource named after the job, loaded exactly as Load does.
func LoadResources(data []byte, file string, lookup LookupFunc) ([]Resource, error) {
	doc, fail, err := parseDoc(data, file, lookup)
	if err != nil {
		return nil, err
	}
	list := mapValue(doc, "resources")
	if doc.Kind != yaml.MappingNode || list == nil {
		job, err := Load(data, file, lookup)
		if err != nil {
			return nil, err
		}
		return []Resource{{Name: job.Name, Job: job}}, nil
	}
	items, problems := resourceItems(doc, list)
	if len(problems) > 0 {
		return nil, fail(problems...)
	}
	var out []Resource
	failed := map[string]bool{}
	for _, it := range items {
		// Every resource's problems are reported together (problems.go).
		job, err := loadDoc(it.doc, file, lookup, func(p ...string) error {
			for i := range p {
				problems = append(problems, "resource "+it.name+": "+p[i])
			}
			return fail(p...)
		})
		if err != nil {
			failed[it.name] = true
			continue
		}
		if c := job.Table.Changes; c != nil { // one feed per job file (docs/changes.md)
			c.Resource = it.name
		}
		job.Name = job.Name + ResourceSep + it.name
		if it.fan.parent != nil && failed[it.fan.parent.Value] {
			continue // its parent's problems are reported; no echo of them
		}
		if p := linkParent(it.name, it.fan, job, out); len(p) > 0 {
			problems = append(problems, p...)
			failed[it.name] = true
			continue
		}
		out = append(out, Resource{Name: it.name, Job: job})
	}
	if len(problems) > 0 {
		return nil, fail(problems...)
	}
	if p := sharedTables(out); len(p) > 0 {
		return nil, fail(p...)
	}
	return out, nil
}

type resourceItem struct {
	name string
	doc  *yaml.Node
	fan  fanout // parent, parent_rows, fanout_concurrency
}

// resourceItems checks the resources: list and builds each resource's
// merged job mapping: shared top-level keys, then defaults, then its own.
func resourceItems(doc, list *yaml.Node) ([]resourceItem, []string) {
	var problems []string
	if mapValue(doc, "source") != nil {
		problems = append(problems, fmt.Sprintf("line %d: source: a file with resources: has no top-level source (put shared keys under defaults:)", mapValue(doc, "source").Line))
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, append(problems, fmt.Sprintf("line %d: resources: a non-empty list of resources, each with a name", list.Line))
	}
	defaults := mapValue(doc, "defaults")
	if defaults != nil && defaults.Kind != yaml.MappingNode {
		problems = append(problems, fmt.Sprintf("line %d: defaults: a mapping of job keys", defaults.Line))
		defaults = nil
	}
	if p := defaultsFanout(defaults); p != "" {
		problems = append(problems, p)
	}
	for _, k := range fileKeys {
		if v := mapValue(defaults, k); v != nil {
			problems = append(problems, fmt.Sprintf("line %d: defaults.%s: %s belongs at the top level of the file", v.Line, k, k))
		}
	}
	shared := &yaml.Node{Kind: yaml.MappingNode, Line: doc.Line, Column: doc.Column}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k := doc.Content[i].Value; k != "resources" && k != "defaults" {
			shared.Content = append(shared.Content, doc.Content[i], doc.Content[i+1])
		}
	}
	seen := map[string]int{}
	var items []resourceItem
	for i, r := range list.Content {
		where := fmt.Sprintf("line %d: resources[%d]", r.Line, i)
		name, p := checkResource(r, where)
		if p != "" {
			problems = append(problems, p)
			continue
		}
		if at, dup := seen[name]; dup {
			problems = append(problems, fmt.Sprintf("%s: name %q is also resources[%d]; resource names are unique in a file", where, name, at))
			continue
		}
		seen[name] = i
		for _, k := range fileKeys[1:] { // a resource's own name is its name
			if v := mapValue(r, k); v != nil {
				problems = append(problems, fmt.Sprintf("line %d: resource %s: %s: %s belongs at the top level of the file", v.Line, name, k, k))
			}
		}
		own := withoutFanout(withoutKey(r, "name"))
		merged := mergeNodes(mergeNodes(shared, defaults), own)
		items = append(items, resourceItem{name: name, doc: merged, fan: readFanout(r)})
	}
	return items, problems
}

// fileKeys are the keys of the whole file (its name, state file and
// retention), which neither defaults nor a resource may set: they key the
// lock and the state of every resource alike.
var fileKeys = []string{"name", "state", "retention"}

// checkResource returns a resource entry's name, or a problem naming where.
func checkResource(r *yaml.Node, where string) (string, string) {
	if r.Kind != yaml.MappingNode {
		return "", where + ": a resource is a mapping with name, source, target"
	}
	n := mapValue(r, "name")
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return "", where + ": name: required"
	}
	if !resourceName.MatchString(n.Value) {
		return "", fmt.Sprintf("%s: name %q may only contain letters, digits, _ and -", where, n.Value)
	}
	for _, k := range fanoutKeys {
		if v := mapValue(r, k); v != nil && v.Kind != yaml.ScalarNode {
			return "", fmt.Sprintf("line %d: resource %s: %s: a single value", v.Line, n.Value, k)
		}
	}
	if mapValue(r, "resources") != nil || mapValue(r, "defaults") != nil {
		return "", where + ": resources and defaults belong at the top level only"
	}
	return n.Value, ""
}

// joinBaseURL replaces source.base_url + source.path by source.url in a job
// mapping. It returns a problem when the three are combined wrongly.
func joinBaseURL(doc *yaml.Node) string {
	src := mapValue(doc, "source")
	if src == nil || src.Kind != yaml.MappingNode {
		return ""
	}
	base, path, url := mapValue(src, "base_url"), mapValue(src, "path"), mapValue(src, "url")
	switch {
	case base == nil && path == nil:
		return ""
	case url != nil:
		return fmt.Sprintf("line %d: source.url: give either source.url or source.base_url with source.path, not both", url.Line)
	case base == nil || path == nil:
		at := base
		if at == nil {
			at = path
		}
		return fmt.Sprintf("line %d: source: base_url and path go together (one is missing)", at.Line)
	case base.Kind != yaml.ScalarNode || path.Kind != yaml.ScalarNode:
		return fmt.Sprintf("line %d: source.base_url and source.path are strings", base.Line)
	}
	joined := strings.TrimRight(base.Value, "/") + "/" + strings.TrimLeft(path.Value, "/")
	keyNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "url", Line: path.Line, Column: path.Column}
	valNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: joined, Line: path.Line, Column: path.Column}
	out := withoutKey(withoutKey(src, "base_url"), "path")
	out.Content = append(out.Content, keyNode, valNode)
	*src = *out
	return ""
}

// mapValue returns the value node of key in a mapping node, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// withoutKey returns a shallow copy of mapping m without key.
func withoutKey(m *yaml.Node, key string) *yaml.Node {
	c := *m
	c.Content = nil
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != key {
			c.Content = append(c.Content, m.Content[i], m.Content[i+1])
		}
	}
	return &c
}

// mergeNodes deep-merges mapping over onto mapping base into a new node:
// keys of over win; where both values are mappings they merge in turn.
// Every node of the result is a copy.
func mergeNodes(base, over *yaml.Node) *yaml.Node {
	if base == nil || base.Kind != yaml.MappingNode {
		return copyMapping(over)
	}
	if over == nil || over.Kind != yaml.MappingNode {
		return copyMapping(base)
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: over.Tag, Line: over.Line, Column: over.Column}
	for i := 0; i+1 < len(base.Content); i += 2 {
		k := base.Content[i].Value
		v := base.Content[i+1]
		if ov := mapValue(over, k); ov != nil {
			if v.Kind == yaml.MappingNode && ov.Kind == yaml.MappingNode {
				v = mergeNodes(v, ov)
			} else {
				v = copyMapping(ov)
			}
			out.Content = append(out.Content, copyMapping(base.Content[i]), v)
			continue
		}
		out.Content = append(out.Content, copyMapping(base.Content[i]), copyMapping(v))
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		// A key the resource repeats is kept twice, to be refused as a
		// duplicate, never settled by its first value.
		if k := over.Content[i].Value; mapValue(base, k) == nil || mapValue(over, k) != over.Content[i+1] {
			out.Content = append(out.Content, copyMapping(over.Content[i]), copyMapping(over.Content[i+1]))
		}
	}
	return out
}

// copyMapping deep-copies a node and everything under it, so that
// expanding ${VAR} in (or rewriting the source of) one resource never
// changes another's view of the defaults they share.
func copyMapping(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, v := range n.Content {
		c.Content[i] = copyMapping(v)
	}
	return &c
}
