package httpsource

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// A page that holds one key twice in an object on a path the run reads
// ({"next_cursor":null,"data":[…],"next_cursor":"c3"}) has two answers:
// GJSON reads the first, encoding/json and JavaScript the last, so the
// API's own clients may read a cursor where idemsync would read the end
// of the walk. Such a page is refused, naming the key and the setting that
// reads it (docs/job-file.md, "source").

// keyTree is the plain-key prefixes of the body paths a run reads, as a
// tree of keys: the objects in which a key met twice is refused.
type keyTree struct {
	kids map[string]*keyTree
	read string // the setting whose path ends here or runs through here
}

// readPaths are the body paths a job reads besides its records: the
// settings that name them and their GJSON paths.
func readPaths(c Config) [][2]string {
	var out [][2]string
	add := func(setting, path string) {
		if path != "" && !strings.HasPrefix(path, "header:") {
			out = append(out, [2]string{setting, path})
		}
	}
	add("source.records", c.Source.Records)
	add("source.error_path", c.Source.ErrorPath)
	for _, p := range c.Reads {
		add(p[0], p[1])
	}
	return out
}

// newKeyTree builds the tree of the plain-key prefixes of paths (setting,
// GJSON path); nil when none has a key.
func newKeyTree(paths [][2]string) *keyTree {
	var root *keyTree
	for _, p := range paths {
		prefix, _ := plainPrefix(p[1])
		n := root
		for _, k := range splitPath(prefix) {
			if k == "" {
				break // ".." (JSON lines) or an empty key: nothing further to place
			}
			if root == nil {
				root = &keyTree{}
				n = root
			}
			if n.kids == nil {
				n.kids = map[string]*keyTree{}
			}
			kid := n.kids[k]
			if kid == nil {
				kid = &keyTree{read: p[0]}
				n.kids[k] = kid
			}
			n = kid
		}
	}
	return root
}

// splitPath splits a path of plain keys at its unescaped dots and removes
// the escapes of each key.
func splitPath(path string) []string {
	if path == "" {
		return nil
	}
	var keys []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '\\' && i+1 < len(path):
			i++
			cur.WriteByte(path[i])
		case c == '.':
			keys = append(keys, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(keys, cur.String())
}

// duplicateKey returns why the valid JSON body holds a key of t twice in
// one object on the way to a path the run reads, or "". sc is the body's
// scan (scanBodyKeys with t): the root object's keys come from it, so
// that a page's records are not read once more for them; the objects
// below, from gjson.
func (t *keyTree) duplicateKey(body []byte, sc bodyScan) string {
	if t == nil {
		return ""
	}
	if sc.keysUnsure {
		return t.dup(gjson.ParseBytes(body), "")
	}
	for i, k := range sc.keys {
		for _, prev := range sc.keys[:i] {
			if prev.name == k.name {
				return t.twice(k.name, "")
			}
		}
	}
	for _, k := range sc.keys {
		if kid := t.kids[k.name]; len(kid.kids) > 0 && k.start >= 0 && k.end > k.start {
			if why := kid.dup(gjson.ParseBytes(body[k.start:k.end]), k.name); why != "" {
				return why
			}
		}
	}
	return ""
}

// twice says that key, read by a setting of t, is twice in the object at
// at.
func (t *keyTree) twice(key, at string) string {
	return fmt.Sprintf("the body holds the key %q twice in the object at %s (%s reads it): the API's clients may read either", key, where(at), t.kids[key].read)
}

func (t *keyTree) dup(v gjson.Result, at string) string {
	if !v.IsObject() || len(t.kids) == 0 {
		return ""
	}
	seen := make(map[string]gjson.Result, len(t.kids))
	why := ""
	v.ForEach(func(k, val gjson.Result) bool {
		name := k.String()
		kid := t.kids[name]
		if kid == nil {
			return true
		}
		if _, twice := seen[name]; twice {
			why = t.twice(name, at)
			return false
		}
		seen[name] = val
		return true
	})
	if why != "" {
		return why
	}
	for name, val := range seen {
		if why := t.kids[name].dup(val, join(at, name)); why != "" {
			return why
		}
	}
	return ""
}

func where(at string) string {
	if at == "" {
		return "the top level"
	}
	return at
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}
