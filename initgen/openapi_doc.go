package initgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"gopkg.in/yaml.v3"
)

// apiDoc is an OpenAPI 3.x description, decoded as plain maps, with the
// $ref resolution the generator needs.
type apiDoc struct {
	root map[string]any
	from string // the file or URL it was read from

	// What propsIn and typeIn worked out for a $ref, once each: schemas
	// naming the same part many times would otherwise be walked once per
	// way to reach them, exponentially many. walks counts the walks.
	propsOf   map[string]map[string]map[string]any
	typeOfRef map[string]string
	walks     int
	merged    int // properties copied merging allOf parts, bounded by maxMerged

	// at is the path whose operation is being read; unresolved holds, by
	// path, the first $ref met there that names nothing this file has (in
	// another file, or a typo), which init refuses rather than leave out
	// what it hides.
	at         string
	unresolved map[string]string
}

// ReadOpenAPI reads an OpenAPI 3.x description from a file or an http(s)
// URL, in JSON or YAML.
func ReadOpenAPI(ctx context.Context, src string) (*apiDoc, error) {
	var data []byte
	var err error
	// Errors and the file written name src without a URL's password and
	// query values (docs/job-file.md, "What is and is not a secret").
	shown := ShownURL(src)
	if u, perr := url.Parse(src); perr == nil && (u.Scheme == "http" || u.Scheme == "https") {
		data, err = getDescription(ctx, u)
	} else {
		data, err = readDescriptionFile(src)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // named by shown
		}
	}
	if err != nil {
		return nil, contract.Errorf(contract.Invalid, "init --openapi %s: %w", shown, err)
	}
	return parseOpenAPI(data, shown)
}

// parseOpenAPI decodes the description read from src.
func parseOpenAPI(data []byte, src string) (*apiDoc, error) {
	var root map[string]any
	var err error
	if strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
		err = json.Unmarshal(data, &root)
	} else {
		err = yaml.Unmarshal(data, &root)
	}
	if err != nil {
		return nil, contract.Errorf(contract.Invalid, "init --openapi %s: neither JSON nor YAML: %w", src, err)
	}
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.") {
		return nil, contract.Errorf(contract.Invalid, "init --openapi %s: not an OpenAPI 3.x description (openapi: %q; Swagger 2.0 is not read)", src, v)
	}
	return &apiDoc{root: root, from: src}, nil
}

// maxMerged bounds the properties copied merging allOf parts over a whole
// description: a long chain of them (S0 allOf [S1], S1 allOf [S2] …)
// copies as many as the square of its length.
var maxMerged = 1 << 22

// maxDescription is the largest description init reads from a URL.
var maxDescription int64 = 64 << 20

// readDescriptionFile reads a description file up to maxDescription, as
// from a URL: a larger file (or /dev/zero, a FIFO that never ends) is
// refused rather than read whole into memory.
func readDescriptionFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDescription+1))
	if err == nil && int64(len(data)) > maxDescription {
		return nil, fmt.Errorf("the description is larger than %d bytes", maxDescription)
	}
	return data, err
}

func getDescription(ctx context.Context, u *url.URL) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // *url.Error quotes the URL, query values included
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", RedactQuery(u), resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDescription+1))
	if err == nil && int64(len(data)) > maxDescription {
		// Cut short, YAML still parses (type: stri): the file would be
		// written from a part of the description.
		return nil, fmt.Errorf("GET %s: the description is larger than %d bytes", RedactQuery(u), maxDescription)
	}
	return data, err
}

// tooMerged is the error for a description whose allOf parts merged
// more than maxMerged properties, or nil.
func (d *apiDoc) tooMerged() error {
	if d.merged <= maxMerged {
		return nil
	}
	return contract.Errorf(contract.Invalid, "init --openapi %s: its schemas merge more than %d properties through their allOf parts (a chain of allOf parts, each naming the next, copies as many as the square of its length): refused rather than read in time and memory that grow with that square", d.from, maxMerged)
}

// obj is a node as a mapping (nil when it is not one), its $ref resolved.
func (d *apiDoc) obj(node any) map[string]any {
	for range 32 { // a chain of $refs; a cycle ends here
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		node = d.lookup(ref)
		if node == nil {
			d.miss(ref)
		}
	}
	d.miss(str(mapOf(node)["$ref"]) + " (a chain of $refs that does not end)")
	return nil
}

// miss records a $ref met at d.at that resolves to nothing.
func (d *apiDoc) miss(ref string) {
	if d.unresolved == nil {
		d.unresolved = map[string]string{}
	}
	if _, ok := d.unresolved[d.at]; !ok {
		d.unresolved[d.at] = ref
	}
}

// unresolvedAt is the error for the first $ref of paths that resolves to
// nothing, or nil.
func (d *apiDoc) unresolvedAt(paths ...string) error {
	for _, p := range paths {
		if ref, ok := d.unresolved[p]; ok {
			return contract.Errorf(contract.Invalid, "init --openapi %s: GET %s: $ref %q names nothing in the description (init reads one file: bundle a description split across files first)", d.from, commentText(p), commentText(ref))
		}
	}
	return nil
}

// lookup resolves a local $ref (#/components/schemas/x).
func (d *apiDoc) lookup(ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var node any = d.root
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	return node
}

// props are a schema's properties, allOf parts merged.
func (d *apiDoc) props(schema map[string]any) map[string]map[string]any {
	return d.propsIn(schema, refPath{})
}

// propsIn is props of a schema reached through the $refs of path: a part
// already on it is a cycle (A allOf B, B allOf A), merged no further.
func (d *apiDoc) propsIn(schema map[string]any, path refPath) map[string]map[string]any {
	out := map[string]map[string]any{}
	if schema == nil {
		return out
	}
	d.walks++
	for _, part := range list(schema["allOf"]) {
		if d.merged > maxMerged { // refused by BuildOpenAPI (tooMerged)
			return out
		}
		ref := str(mapOf(part)["$ref"])
		sub, done := d.propsOf[ref]
		if !done {
			ok, leave := path.enter(part)
			if !ok {
				continue
			}
			sub = d.propsIn(d.obj(part), path)
			leave()
			if ref != "" {
				if d.propsOf == nil {
					d.propsOf = map[string]map[string]map[string]any{}
				}
				d.propsOf[ref] = sub
			}
		}
		if d.merged += len(sub); d.merged > maxMerged {
			return out
		}
		for k, v := range sub {
			out[k] = v
		}
	}
	for k, v := range mapOf(schema["properties"]) {
		if s := d.obj(v); s != nil {
			out[k] = s
		}
	}
	return out
}

// refPath holds the $refs a walk through allOf, anyOf or oneOf parts is
// inside of. A description is a graph, not a tree: a schema reached again
// through its own parts would be walked forever (a stack overflow, which
// no recover catches), so the walk stops at a $ref already on its path.
type refPath map[string]bool

// enter adds node's $ref to the path: false when it is on it already;
// leave takes it off again.
func (p refPath) enter(node any) (ok bool, leave func()) {
	ref := str(mapOf(node)["$ref"])
	if ref == "" {
		return true, func() {}
	}
	if p[ref] {
		return false, nil
	}
	p[ref] = true
	return true, func() { delete(p, ref) }
}

// typeOf is a schema's type: its type, or the one non-null type of
// anyOf/oneOf, else "".
func (d *apiDoc) typeOf(s map[string]any) string {
	return d.typeIn(s, refPath{})
}

// typeIn is typeOf of a schema reached through the $refs of path: an
// alternative already on it is a cycle, which adds no type.
func (d *apiDoc) typeIn(s map[string]any, path refPath) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any: // 3.1: [string, "null"]
		for _, x := range t {
			if x != "null" {
				return fmt.Sprint(x)
			}
		}
	}
	if len(list(s["allOf"])) > 0 {
		return "object"
	}
	d.walks++
	kinds := map[string]bool{}
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, alt := range list(s[k]) {
			a := d.obj(alt)
			if a == nil || a["type"] == "null" {
				continue
			}
			ref := str(mapOf(alt)["$ref"])
			typ, done := d.typeOfRef[ref]
			if !done {
				ok, leave := path.enter(alt)
				if !ok {
					continue
				}
				typ = d.typeIn(a, path)
				leave()
				if ref != "" {
					if d.typeOfRef == nil {
						d.typeOfRef = map[string]string{}
					}
					d.typeOfRef[ref] = typ
				}
			}
			kinds[typ] = true
		}
	}
	if len(kinds) == 1 {
		for k := range kinds {
			return k
		}
	}
	if len(kinds) > 1 {
		return "mixed"
	}
	return ""
}

// itemsOf is an array schema's item schema, or nil.
func (d *apiDoc) itemsOf(s map[string]any) map[string]any {
	if d.typeOf(s) != "array" {
		return nil
	}
	return d.obj(s["items"])
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }
func list(v any) []any           { l, _ := v.([]any); return l }
func str(v any) string           { s, _ := v.(string); return s }
