package sync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// styleValues are values the loader accepts for the pagination keys a
// style may require.
var styleValues = map[string]string{
	"field": "ts", "param": "since", "size": "10", "size_param": "limit",
	"next": "meta.next", "next_header": "X-Next", "next_url": "links.next",
}

// styleSpec is validSpec with a pagination block of style and keys.
func styleSpec(style string, keys []string) string {
	i := strings.Index(validSpec, "pagination:")
	j := strings.Index(validSpec, "retry:")
	var b strings.Builder
	b.WriteString(validSpec[:i] + "pagination:\n  style: " + style + "\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, styleValues[k])
	}
	return b.String() + validSpec[j:]
}

// loadProblems loads spec and returns the problems the loader reports.
func loadProblems(t *testing.T, spec string) []string {
	t.Helper()
	_, err := Load([]byte(spec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
	if err == nil {
		return nil
	}
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("load: %v, want a SpecError", err)
	}
	return se.Problems
}

func mentions(problems []string, key string) bool {
	return slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, key+" ") || strings.Contains(p, key+":") })
}

// The schema rules each style declares (StyleRules) are the loader's: the
// keys it names are the ones the loader requires.
func TestStyleRulesMatchLoader(t *testing.T) {
	rules := StyleRules()
	if len(rules) != len(styleTable) || rules[0].Name != StylePage || rules[len(rules)-1].Name != StyleNone {
		t.Fatalf("StyleRules = %+v, want the table's styles in order page .. none", rules)
	}
	for _, r := range rules {
		keys := slices.Clone(r.Required)
		if len(r.OneOf) > 0 {
			keys = append(keys, r.OneOf[0])
		}
		if r.SizeNeedsParam {
			keys = append(keys, "size", "size_param")
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		if p := loadProblems(t, styleSpec(r.Name, keys)); p != nil {
			t.Errorf("%s with %v: %v, want it to load", r.Name, keys, p)
			continue
		}
		for _, k := range r.Required {
			rest := slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return s == k })
			if p := loadProblems(t, styleSpec(r.Name, rest)); !mentions(p, "pagination."+k) {
				t.Errorf("%s without %s: problems %v, want pagination.%s named", r.Name, k, p, k)
			}
		}
		if len(r.OneOf) > 1 {
			none := slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return slices.Contains(r.OneOf, s) })
			if p := loadProblems(t, styleSpec(r.Name, none)); !mentions(p, "pagination") {
				t.Errorf("%s with none of %v: problems %v, want pagination named", r.Name, r.OneOf, p)
			}
			if p := loadProblems(t, styleSpec(r.Name, append(slices.Clone(keys), r.OneOf[1]))); !mentions(p, "pagination") {
				t.Errorf("%s with two of %v: problems %v, want pagination named", r.Name, r.OneOf, p)
			}
		}
		if slices.Contains(keys, "size") {
			rest := slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return s == "size_param" })
			p := loadProblems(t, styleSpec(r.Name, rest))
			if got := mentions(p, "pagination.size_param"); got != r.SizeNeedsParam {
				t.Errorf("%s with size but no size_param: problems %v, want size_param named = %v", r.Name, p, r.SizeNeedsParam)
			}
		}
	}
}

// An unknown style is rejected with the table's names, and only the
// numbered styles are accepted with source.concurrency above 1.
func TestStyleTableInLoader(t *testing.T) {
	p := loadProblems(t, styleSpec("pages", nil))
	if !mentions(p, "pagination.style") || !strings.Contains(strings.Join(p, "\n"), "page, offset, cursor, link, hwm, none") {
		t.Errorf("unknown style: problems %v, want pagination.style and the list of styles", p)
	}
	for _, r := range StyleRules() {
		keys := append(slices.Clone(r.Required), "size", "size_param")
		if len(r.OneOf) > 0 {
			keys = append(keys, r.OneOf[0])
		}
		slices.Sort(keys)
		spec := strings.Replace(styleSpec(r.Name, slices.Compact(keys)), "  records: data.items\n", "  records: data.items\n  concurrency: 4\n", 1)
		p := loadProblems(t, spec)
		want := r.Name == StylePage || r.Name == StyleOffset
		if got := !mentions(p, "source.concurrency"); got != want {
			t.Errorf("%s with concurrency 4: problems %v; accepted = %v, want %v", r.Name, p, got, want)
		}
		if !want && !strings.Contains(strings.Join(p, "\n"), "only page and offset styles fetch pages concurrently") {
			t.Errorf("%s with concurrency 4: problems %v, want the concurrent styles named", r.Name, p)
		}
	}
}

// status without the job file describes a stored position as its own
// style does.
func TestGuessStyleDescribes(t *testing.T) {
	cases := []struct{ style, value, want string }{
		{StylePage, "3", "page 3"},
		{StyleOffset, "40", "offset 40"},
		{StyleCursor, "abc", "cursor abc"},
		{StyleCursor, "https://api.example.com/v1/orders?after=9", "https://api.example.com/v1/orders?after=9"},
		{StyleLink, "https://api.example.com/v1/orders?page=2", "https://api.example.com/v1/orders?page=2"},
		{StyleHWM, "2024-05-01T10:00:00Z", "mark 2024-05-01T10:00:00Z"},
	}
	for _, c := range cases {
		pos, err := ParsePosition(c.style, c.value)
		if err != nil {
			t.Fatalf("ParsePosition(%s, %q): %v", c.style, c.value, err)
		}
		info := &RunInfo{Job: "orders", Checkpoint: pos.Encode(), Status: RunCompleted}
		for _, style := range []string{c.style, ""} {
			if got := RunResult(info, style, "", NewRedactor()).Checkpoint; got != c.want {
				t.Errorf("%s %q with style %q: checkpoint %q, want %q", c.style, c.value, style, got, c.want)
			}
		}
	}
	if got := RunResult(&RunInfo{Checkpoint: Position{}.Encode()}, "", "", NewRedactor()).Checkpoint; got != "start" {
		t.Errorf("zero position without style: %q, want start", got)
	}
	if _, err := ParsePosition(StyleNone, "1"); err == nil || !strings.Contains(err.Error(), "style none has no positions") {
		t.Errorf("ParsePosition(none): %v, want no positions to replay from", err)
	}
}

// Offsets advance by records (a page fetched) or by pages of a size (pages
// fetched concurrently), from one function.
func TestOffsetArithmetic(t *testing.T) {
	o := offsetPaging{}
	if got := o.ahead(Position{Offset: 40, Size: 7}, 3, 7); got != (Position{Offset: 61, Size: 7}) {
		t.Errorf("ahead = %+v, want offset 61 size 7", got)
	}
	if got, ok := o.seenThrough(Pagination{}, Position{Offset: 40}, 10, 4); !ok || got != 44 {
		t.Errorf("seenThrough = %d, %v; want 44, true", got, ok)
	}
	next, own, _, err := o.step(nil, Position{Offset: 40, Size: 7}, &Response{Raw: 5}, "", shortEnd, "is short")
	if err != nil || next != (Position{Offset: 45, Size: 7}) || own != shortEnd {
		t.Errorf("step = %+v, %v, %v; want offset 45 size 7, shortEnd", next, own, err)
	}
}

// Each style rejects the pagination keys it does not use, naming the key
// and the style, and accepts those it does.
func TestStyleUnusedKeys(t *testing.T) {
	values := map[string]string{"param": "since", "start": "2", "total_pages": "meta.pages", "total": "meta.total",
		"continue": "true", "next": "meta.next", "next_header": "X-Next", "next_url": "links.next",
		"field": "ts", "initial": "2024-01-01T00:00:00Z", "overlap": "1h"}
	uses := map[string][]string{
		StylePage:   {"param", "start", "total_pages", "total", "continue"},
		StyleOffset: {"param", "total", "continue"},
		StyleCursor: {"param", "total", "continue", "next", "next_header", "next_url"},
		StyleLink:   {"total", "continue"},
		StyleHWM:    {"param", "field", "initial", "overlap"},
		StyleNone:   nil,
	}
	for _, r := range StyleRules() {
		for key, v := range values {
			spec := strings.Replace(styleSpec(r.Name, nil), "  style: "+r.Name+"\n", "  style: "+r.Name+"\n  "+key+": "+v+"\n", 1)
			p := strings.Join(loadProblems(t, spec), "\n")
			rejected := strings.Contains(p, "pagination."+key+": is not used with style "+r.Name)
			if want := !slices.Contains(uses[r.Name], key); rejected != want {
				t.Errorf("%s with %s: problems %q; rejected = %v, want %v", r.Name, key, p, rejected, want)
			}
		}
	}
}
