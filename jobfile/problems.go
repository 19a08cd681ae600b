package jobfile

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Every problem of a job file is reported together (docs/job-file.md,
// General rules): an unknown key or a value of the wrong shape is taken
// out of the document once reported, so that decoding and the checks of
// the remaining keys still run; a value of the wrong type leaves its
// field unset, and the checks' complaints about that key are dropped as
// echoes of the problem already reported.

// reportedKey is where a problem of checkNode is: its line and the last
// segment of its key.
type reportedKey struct {
	line int
	key  string
}

var problemAt = regexp.MustCompile(`^line (\d+): (?:unknown key |duplicate key )?([^\s:]+)`)

// reportedKeys returns the keys that problems ("line N: [unknown key] KEY
// ...") name.
func reportedKeys(problems []string) map[reportedKey]bool {
	out := map[reportedKey]bool{}
	for _, p := range problems {
		m := problemAt.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		key := m[2]
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			key = key[i+1:]
		}
		out[reportedKey{n, key}] = true
	}
	return out
}

// dropReported removes from mapping n, at any depth, every key that a
// problem names at its line (an unknown or duplicate key) or at its
// value's (a value of the wrong shape).
func dropReported(n *yaml.Node, bad map[reportedKey]bool) {
	switch n.Kind {
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if bad[reportedKey{k.Line, k.Value}] || bad[reportedKey{v.Line, k.Value}] {
				continue
			}
			dropReported(v, bad)
			kept = append(kept, k, v)
		}
		n.Content = kept
	case yaml.SequenceNode:
		for _, c := range n.Content {
			dropReported(c, bad)
		}
	}
}

// problemKey returns the key a problem ("line N: key: ...") is about.
func problemKey(p string) string {
	if _, rest, ok := strings.Cut(p, ": "); ok && strings.HasPrefix(p, "line ") {
		p = rest
	}
	key, _, _ := strings.Cut(p, ":")
	return strings.TrimSpace(key)
}

// withoutEchoes returns the problems of later checks that are not about a
// key already reported.
func withoutEchoes(later, reported []string) []string {
	keys := map[string]bool{}
	for _, p := range reported {
		keys[problemKey(p)] = true
	}
	var out []string
	for _, p := range later {
		if !keys[problemKey(p)] {
			out = append(out, p)
		}
	}
	return out
}
