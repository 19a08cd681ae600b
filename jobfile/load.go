package jobfile

import (
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"

	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// SpecError is an invalid job spec: one or more problems, each naming the key
// and, where known, the line (contract.Invalid: exit 2).
type SpecError struct {
	File     string
	Name     string // the job's name: as written, when the file could be read that far; else ""
	Problems []string
}

func (e *SpecError) Error() string {
	prefix := "invalid job spec"
	if e.File != "" {
		prefix += " " + e.File
	}
	if len(e.Problems) == 1 {
		return prefix + ": " + e.Problems[0]
	}
	return prefix + ":\n  " + strings.Join(e.Problems, "\n  ")
}

// LoadFile reads and validates the job file at path, expanding ${VAR} from
// the environment. It returns a *SpecError (wrapped in an *Error with exit
// code 2) for any problem.
func LoadFile(path string) (*idsync.Job, error) {
	abs, data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Load(data, abs, os.LookupEnv)
}

// readFile reads the job file at path and returns its absolute path and
// bytes; a failure is a usage error (exit 2).
func readFile(path string) (string, []byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, &contract.Error{Class: contract.Invalid, Msg: "job file " + path, Err: err}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", nil, &contract.Error{Class: contract.Invalid, Msg: "read job file", Err: err}
	}
	return abs, data, nil
}

// parseDoc parses a job file's bytes into its top YAML node, and returns
// with it the function that makes a *SpecError (exit 2) of problems. A file
// that is not YAML or is empty fails with that error.
func parseDoc(data []byte, file string, lookup LookupFunc) (*yaml.Node, func(problems ...string) error, error) {
	// The name is read from the whole file once: a file of many resources
	// calls fail once per resource with a problem.
	name, named := "", false
	fail := func(problems ...string) error {
		if !named {
			name, named = specName(data, lookup), true
		}
		return &contract.Error{Class: contract.Invalid, Err: &SpecError{File: file, Name: name, Problems: problems}}
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, fail, fail(yamlProblem(err))
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, fail, fail("the file is empty")
	}
	// A second document (after ---) would be ignored: a job file is one.
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fail, fail(yamlProblem(err))
		}
		return nil, fail, fail(fmt.Sprintf("line %d: a job file is one YAML document; a second one starts here (---)", next.Line))
	}
	return root.Content[0], fail, nil
}

// Load parses and validates a job file's bytes. file is its absolute path
// (relative paths in the spec resolve against its folder; "" means the
// current directory). lookup supplies environment variables.
func Load(data []byte, file string, lookup LookupFunc) (*idsync.Job, error) {
	doc, fail, err := parseDoc(data, file, lookup)
	if err != nil {
		return nil, err
	}
	if doc.Kind != yaml.MappingNode {
		return nil, fail(fmt.Sprintf("line %d: a job file is a mapping with name, source, pagination, target", doc.Line))
	}
	if mapValue(doc, "resources") != nil {
		return nil, fail(fmt.Sprintf("line %d: resources: a file with several resources is loaded by LoadResources, not Load", mapValue(doc, "resources").Line))
	}
	job, err := loadDoc(doc, file, lookup, fail)
	if err != nil {
		return nil, err
	}
	if p := orphanRefs(job, ""); len(p) > 0 {
		return nil, fail(p...)
	}
	return job, nil
}

// loadDoc validates one job's mapping node and fills its defaults.
func loadDoc(doc *yaml.Node, file string, lookup LookupFunc, fail func(...string) error) (*idsync.Job, error) {
	if p := joinBaseURL(doc); p != "" {
		return nil, fail(p)
	}
	red := idsync.NewRedactor()
	var problems []string
	lines := map[string]int{"": doc.Line}
	checkNode(doc, reflect.TypeOf(spec.Spec{}), "", lines, &problems)
	expandNode(doc, "", lookup, red, &problems)
	wholeNumbers(doc, reflect.TypeOf(spec.Spec{}), "", &problems)
	dropReported(doc, reportedKeys(problems)) // problems.go: report the rest too
	var parsed spec.Spec
	if err := doc.Decode(&parsed); err != nil {
		problems = append(problems, keyedProblems(err, lines)...)
	}
	job := &idsync.Job{Spec: parsed, File: file, Secrets: red}
	problems = append(problems, withoutEchoes((loading{job}).finish(lines), problems)...)
	if len(problems) > 0 {
		for i := range problems { // a value quoted in a problem may be a ${VAR} secret
			problems[i] = red.Redact(problems[i])
		}
		return nil, fail(problems...)
	}
	return job, nil
}

func yamlProblem(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: ")
	return s
}

// keyedProblems names the key of each "line N: ..." decoding error.
func keyedProblems(err error, lines map[string]int) []string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		// A field's own UnmarshalYAML (durations, sizes) says "line N: ...".
		te = &yaml.TypeError{Errors: []string{yamlProblem(err)}}
	}
	byLine := map[int]string{}
	for k, l := range lines {
		if cur, ok := byLine[l]; !ok || len(k) > len(cur) {
			byLine[l] = k
		}
	}
	// Keys side by side on one line ({style: x, size: y}): the error is in
	// one of them, and only their parent is sure.
	for k, l := range lines {
		if cur := byLine[l]; k != cur && strings.Count(k, ".") == strings.Count(cur, ".") {
			byLine[l] = cur[:max(strings.LastIndexByte(cur, '.'), 0)]
		}
	}
	out := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		var n int
		if _, scanErr := fmt.Sscanf(e, "line %d:", &n); scanErr == nil && byLine[n] != "" {
			prefix := fmt.Sprintf("line %d:", n)
			e = prefix + " " + byLine[n] + ":" + strings.TrimPrefix(e, prefix)
		}
		out = append(out, e)
	}
	return out
}

// checkNode rejects unknown keys and wrong shapes, naming the key and line,
// and records the line of every known key in lines.
func checkNode(n *yaml.Node, t reflect.Type, path string, lines map[string]int, problems *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
		return // the type checks itself
	}
	add := func(line int, format string, args ...any) {
		*problems = append(*problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			add(n.Line, "%s must be a mapping", nameOr(path))
			return
		}
		checkMapping(n, t, path, lines, problems)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			add(n.Line, "%s must be a mapping", nameOr(path))
			return
		}
		if reflect.PointerTo(t.Elem()).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
			return // the values check themselves (source.query lists)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := n.Content[i+1]; v.Kind != yaml.ScalarNode {
				add(v.Line, "%s must be a string", join(path, n.Content[i].Value))
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && t.Elem().Kind() == reflect.String && n.Tag != "!!null" {
			n.Kind, n.Content = yaml.SequenceNode, []*yaml.Node{{Kind: yaml.ScalarNode, Value: n.Value, Line: n.Line, Column: n.Column}}
			n.Tag, n.Value = "!!seq", ""
			return // key: id is short for key: [id]
		}
		if n.Kind != yaml.SequenceNode {
			add(n.Line, "%s must be a list", nameOr(path))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			add(n.Line, "%s must be a single value", nameOr(path))
		}
	}
}

// checkMapping checks the keys of a block against the fields of its struct
// type t: an unknown key (with the nearest known one suggested) or a
// duplicate is a problem; a known key's value is checked by checkNode.
func checkMapping(n *yaml.Node, t reflect.Type, path string, lines map[string]int, problems *[]string) {
	fields := map[string]reflect.StructField{}
	var known []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f
		known = append(known, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		f, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("line %d: unknown key %s", k.Line, key)
			if s := suggest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			*problems = append(*problems, msg)
			continue
		}
		if seen[k.Value] {
			*problems = append(*problems, fmt.Sprintf("line %d: duplicate key %s", k.Line, key))
		}
		seen[k.Value] = true
		lines[key] = k.Line
		checkNode(v, f.Type, key, lines, problems)
	}
}

// wholeNumbers refuses, in a key that takes an integer, a number with a
// fraction (size: 2.5), which YAML decoding would cut to 2; it runs after
// ${VAR} expansion, so a variable's value is checked too.
func wholeNumbers(n *yaml.Node, t reflect.Type, path string, problems *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
		return // the type reads itself
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := map[string]reflect.Type{}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fields[name] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if ft, ok := fields[n.Content[i].Value]; ok {
				wholeNumbers(n.Content[i+1], ft, join(path, n.Content[i].Value), problems)
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, c := range n.Content {
				wholeNumbers(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), problems)
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return
		}
		var f float64
		if n.Decode(&f) != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
			*problems = append(*problems, fmt.Sprintf("line %d: %s: %s is not a whole number", n.Line, path, n.Value))
		}
	}
}

// expandNode expands ${VAR} in every scalar value, value by value, so that a
// variable's content can never inject YAML structure; the values of the
// ${VAR}s that are secrets (secretPath) go to red.
func expandNode(n *yaml.Node, path string, lookup LookupFunc, red *idsync.Redactor, problems *[]string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandNode(n.Content[i+1], join(path, n.Content[i].Value), lookup, red, problems)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, fmt.Sprintf("%s[%d]", path, i), lookup, red, problems)
		}
	case yaml.ScalarNode:
		v, used, err := expandEnv(n.Value, lookup)
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("line %d: %s: %v", n.Line, nameOr(path), err))
			return
		}
		if v != n.Value {
			n.Value = v
			if n.Style == 0 { // plain scalar: let YAML resolve its type again (size: ${N:-50})
				n.Tag = ""
			}
		}
		if secretPath(path) {
			red.Add(used...)
			red.Add(joinedWords(v, used)...)
		}
	}
}

// joinedWords returns, for each value of used that s joins to a word
// character (key=tok_${TOKEN}, /acct${ID}/), the whole word it is part
// of: the redactor matches a secret as a whole word only, so the secret
// alone would never be found there (docs/job-file.md, "What is and is not
// a secret").
func joinedWords(s string, used []string) []string {
	word := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	var out []string
	for _, v := range used {
		for off := 0; ; {
			i := strings.Index(s[off:], v)
			if i < 0 {
				break
			}
			from, to := off+i, off+i+len(v)
			for from > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:from])
				if !word(r) {
					break
				}
				from -= n
			}
			for to < len(s) {
				r, n := utf8.DecodeRuneInString(s[to:])
				if !word(r) {
					break
				}
				to += n
			}
			if to-from > len(v) {
				out = append(out, s[from:to])
			}
			off += i + len(v)
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func nameOr(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

// suggest returns the known key closest to k when it is a likely typo.
func suggest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// line returns "line N: " for a key path, or the nearest known parent's line.
func lineOf(lines map[string]int, key string) string {
	for k := key; ; {
		if l, ok := lines[k]; ok {
			return fmt.Sprintf("line %d: ", l)
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			if l, ok := lines[""]; ok && k != "" {
				return fmt.Sprintf("line %d: ", l)
			}
			return ""
		}
		k = k[:i]
	}
}
