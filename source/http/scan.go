package httpsource

import (
	"bytes"
	"strings"
)

// A 2xx body was read five times over before its records were mapped: the
// depth guard, gjson's validation, the error-payload check's lookup of the
// records value and the records' extraction (a lookup again, then a split
// of the array), together more than twice the cost of mapping the records
// (docs/performance.md, "The body read once"). scanBody does the depth guard and, for a records path of
// plain keys, finds the records value and the bounds of its elements in
// the same pass; gjson's validation stays the authority on validity and
// runs after it (a body nested too deep never reaches gjson, whose
// recursion it would overflow). The scan's findings are used only once the
// body is known valid; for any other path, or a body the scan cannot place
// the path in as gjson would (an escaped key on the way, a path through a
// value that is no object), the records are extracted as before.

// bodyScan is what scanBody found.
type bodyScan struct {
	tooDeep bool // nested deeper than the limit, as jsonDepthExceeds says
	// located: found and the bounds below say where the records path's
	// value is, as gjson would find it in the body if it is valid.
	located bool
	found   bool
	start   int      // the value at the path: data[start:end]
	end     int      // (found only)
	elems   [][2]int // when that value is an array: its elements' bounds
	// keys: the top-level keys of the key tree scanBodyKeys was given, as
	// met in a root object (dupkey.go); keysUnsure: a top-level key is
	// escaped, so the scan cannot tell which name it is.
	keys       []topKey
	keysUnsure bool
}

// topKey is a key of the root object the run reads: its name and its
// value's bounds, data[start:end].
type topKey struct {
	name       string
	start, end int
}

// recordsComps splits a records path into its keys when it is plain
// (dot-separated names of letters, digits, '_', '-' and '$', which gjson
// reads as object keys of those names, none all digits, which gjson reads
// as an array index too); ok is false for any other path. "" is the body
// itself: no keys.
func recordsComps(path string) (comps []string, ok bool) {
	if path == "" {
		return []string{}, true
	}
	comps = strings.Split(path, ".")
	for _, name := range comps {
		digits := true
		for i := 0; i < len(name); i++ {
			c := name[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '$') {
				return nil, false
			}
			digits = digits && c >= '0' && c <= '9'
		}
		if name == "" || digits {
			return nil, false
		}
	}
	return comps, true
}

// scanBody checks data's nesting against limit exactly as jsonDepthExceeds
// does (brackets outside strings, no validation) and, when comps is not
// nil, locates the value at the path of those keys (recordsComps). On an
// invalid body its findings mean nothing.
func scanBody(data []byte, comps []string, limit int) bodyScan {
	return scanBodyKeys(data, comps, limit, nil)
}

// scanBodyKeys is scanBody that also notes, in the same pass, where the
// root object holds the top-level keys of top (keys, keysUnsure).
func scanBodyKeys(data []byte, comps []string, limit int, top *keyTree) bodyScan {
	sc := scanner{data: data, comps: comps, follow: -1, tdepth: -1, start: -1, elem: -1, done: comps == nil, top: top, pending: -1}
	if sc.run(limit) {
		return bodyScan{tooDeep: true}
	}
	out := bodyScan{keys: sc.keys, keysUnsure: sc.keysUnsure}
	switch {
	case sc.unsure || !sc.rootSeen:
	case sc.missing:
		out.located = true
	case sc.start >= 0 && sc.end >= 0:
		out.located, out.found, out.start, out.end, out.elems = true, true, sc.start, sc.end, sc.elems
	}
	return out
}

// scanner is scanBody's state. The followed container is the object the
// next key of the path is looked for in, or the records array itself
// (isArr); follow is the depth inside it (-1: none).
type scanner struct {
	data     []byte
	comps    []string
	depth    int
	follow   int
	isArr    bool // the followed container is the records array
	wantKey  bool // in the followed object, the next string is a key
	match    bool // the key just read is comps[k]
	k        int  // keys of the path matched
	rootSeen bool
	done     bool // nothing more to locate
	unsure   bool // the path is placed differently than this scan can tell
	missing  bool // the path's value does not exist
	tdepth   int  // depth the records value starts at (-1: not yet)
	start    int
	end      int
	elem     int // start of the records array's element being read
	elems    [][2]int
	// The top-level keys of top met in a root object (rootObj): topWant
	// says the next string at depth 1 is a key; pending is the index in
	// keys of the key whose value is read next or being read (-1: none).
	top        *keyTree
	rootObj    bool
	topWant    bool
	pending    int
	keys       []topKey
	keysUnsure bool
}

// run scans the body and reports whether it nests deeper than limit.
func (s *scanner) run(limit int) bool {
	data := s.data
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case '"':
			j := stringEnd(data, i)
			if s.depth == 1 && s.rootObj {
				s.topString(i, j)
			}
			if !s.done && s.depth == s.follow && s.wantKey {
				key := data[i+1 : max(j-1, i+1)]
				if bytes.IndexByte(key, '\\') >= 0 {
					s.unsure, s.done = true, true
				}
				s.match = string(key) == s.comps[s.k]
				s.wantKey = false
			} else {
				s.value(i, c)
				s.valueEnd(j)
			}
			i = j
			continue
		case '{', '[':
			s.value(i, c)
			switch {
			case s.depth == 0 && c == '{' && s.top != nil:
				s.rootObj, s.topWant = true, true
			case s.depth == 1:
				s.topValue(i)
			}
			s.depth++
			if s.depth > limit {
				return true
			}
			if s.depth == s.follow && c == '{' {
				s.wantKey = true
			}
		case '}', ']':
			if s.depth == 0 {
				// More closed than opened: the body is invalid, and the
				// depth would fall to -1, the followed depth of "none".
				s.unsure, s.done = true, true
			}
			if !s.done && s.depth == s.follow {
				switch {
				case s.isArr:
				case s.k == 0:
					s.missing, s.done = true, true // the body's object has no such key
				default:
					// gjson would look for the path in a later key of the
					// same name: leave it to gjson.
					s.unsure, s.done = true, true
				}
				s.follow = -1
			}
			s.depth--
			if s.depth == 1 {
				s.topEnd(i + 1)
			}
			s.valueEnd(i + 1)
		case ',':
			if s.depth == 1 && s.rootObj {
				s.topWant = true
			}
			if !s.done && s.depth == s.follow && !s.isArr {
				s.wantKey = true
			}
		default:
			if scalarByte(c) {
				j := i + 1
				for j < len(data) && scalarByte(data[j]) {
					j++
				}
				if s.depth == 1 {
					s.topValue(i)
					s.topEnd(j)
				}
				s.value(i, c)
				s.valueEnd(j)
				i = j
				continue
			}
		}
		i++
	}
	return false
}

// topString notes the string data[i:j] of the root object: a key (the
// next string at depth 1 after '{' or ','), or a value.
func (s *scanner) topString(i, j int) {
	if !s.topWant {
		s.topValue(i)
		s.topEnd(j)
		return
	}
	s.topWant = false
	key := s.data[i+1 : max(j-1, i+1)]
	if bytes.IndexByte(key, '\\') >= 0 {
		s.keysUnsure = true
		return
	}
	if _, read := s.top.kids[string(key)]; !read {
		return
	}
	s.keys = append(s.keys, topKey{name: string(key), start: -1, end: -1})
	s.pending = len(s.keys) - 1
}

// topValue notes that a value of the root object starts at data[i].
func (s *scanner) topValue(i int) {
	if s.pending >= 0 && s.keys[s.pending].start < 0 {
		s.keys[s.pending].start = i
	}
}

// topEnd notes that the value of the root object being read ends before
// data[e].
func (s *scanner) topEnd(e int) {
	if s.pending >= 0 {
		s.keys[s.pending].end = e
		s.pending = -1
	}
}

// value notes a value starting at data[i] (first byte c) at the current
// depth.
func (s *scanner) value(i int, c byte) {
	if s.done {
		return
	}
	switch {
	case !s.rootSeen && s.depth == 0:
		s.rootSeen = true
		if len(s.comps) == 0 {
			s.target(i, c)
		} else if c == '{' {
			s.follow = 1
		} else {
			s.unsure, s.done = true, true // gjson reads a path into an array or a scalar otherwise
		}
	case s.depth != s.follow:
	case s.isArr:
		s.elem = i
	case s.match:
		s.match = false
		s.k++
		switch {
		case s.k == len(s.comps):
			s.target(i, c)
		case c == '{':
			s.follow = s.depth + 1
		default:
			s.unsure, s.done = true, true
		}
	}
}

// target notes the records value starting at data[i].
func (s *scanner) target(i int, c byte) {
	s.start, s.tdepth = i, s.depth
	s.follow, s.wantKey = -1, false // a ',' of an invalid body may have left wantKey set: no key follows in the records
	if c == '[' {
		s.follow, s.isArr = s.depth+1, true
	}
}

// valueEnd notes that the value that started at the current depth ends
// before data[e].
func (s *scanner) valueEnd(e int) {
	if s.done {
		return
	}
	if s.isArr && s.depth == s.follow && s.elem >= 0 {
		s.elems = append(s.elems, [2]int{s.elem, e})
		s.elem = -1
	}
	if s.start >= 0 && s.depth == s.tdepth {
		s.end, s.done = e, true
	}
}

// stringEnd returns the index just past the string starting with the
// quote at data[i] (len(data) when it is not closed): a quote preceded by
// an even run of backslashes, as jsonDepthExceeds reads it.
func stringEnd(data []byte, i int) int {
	j := i + 1
	for {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return len(data)
		}
		q += j
		b := q - 1
		for b > i && data[b] == '\\' {
			b--
		}
		if (q-1-b)%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// scalarByte reports whether c can be part of a number or a literal.
func scalarByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}
