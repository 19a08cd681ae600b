package jobfile

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Every problem of a job file is reported together (docs/job-file.md,
// General rules): an unknown key or a value of the wrong shape is taken
// out of the document once reported, so that decoding and the checks of
// the remaining keys still run; a value of the wrong type leaves its
// field unset, and the checks' complaints about that key are dropped as
// echoes of the problem already reported.

// problemLines returns the lines that problems ("line N: ...") name.
func problemLines(problems []string) map[int]bool {
	lines := map[int]bool{}
	for _, p := range problems {
		var n int
		if _, err := fmt.Sscanf(p, "line %d:", &n); err == nil {
			lines[n] = true
		}
	}
	return lines
}

// dropReported removes from mapping n, at any depth, every key on a line
// of bad (an unknown or duplicate key) and every key whose single value is
// (a value of the wrong shape).
func dropReported(n *yaml.Node, bad map[int]bool) {
	switch n.Kind {
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if bad[k.Line] || v.Kind == yaml.ScalarNode && bad[v.Line] {
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
// key already reported (or one inside it).
func withoutEchoes(later, reported []string) []string {
	keys := map[string]bool{}
	for _, p := range reported {
		keys[problemKey(p)] = true
	}
	var out []string
	for _, p := range later {
		k := problemKey(p)
		echo := false
		for r := range keys {
			if k == r || strings.HasPrefix(k, r+".") || strings.HasPrefix(k, r+"[") {
				echo = true
			}
		}
		if !echo {
			out = append(out, p)
		}
	}
	return out
}
