package jobfile

import (
	"fmt"

	"github.com/idemsync/idemsync/sync/paging"

	"errors"
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
	rules := paging.StyleRules()
	if len(rules) != 6 || rules[0].Name != paging.StylePage || rules[len(rules)-1].Name != paging.StyleNone {
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
	for _, r := range paging.StyleRules() {
		keys := append(slices.Clone(r.Required), "size", "size_param")
		if len(r.OneOf) > 0 {
			keys = append(keys, r.OneOf[0])
		}
		slices.Sort(keys)
		spec := strings.Replace(styleSpec(r.Name, slices.Compact(keys)), "  records: data.items\n", "  records: data.items\n  concurrency: 4\n", 1)
		p := loadProblems(t, spec)
		want := r.Name == paging.StylePage || r.Name == paging.StyleOffset
		if got := !mentions(p, "source.concurrency"); got != want {
			t.Errorf("%s with concurrency 4: problems %v; accepted = %v, want %v", r.Name, p, got, want)
		}
		if !want && !strings.Contains(strings.Join(p, "\n"), "only page and offset styles fetch pages concurrently") {
			t.Errorf("%s with concurrency 4: problems %v, want the concurrent styles named", r.Name, p)
		}
	}
}

// Each style rejects the pagination keys it does not use, naming the key
// and the style, and accepts those it does.
func TestStyleUnusedKeys(t *testing.T) {
	values := map[string]string{"param": "since", "start": "2", "total_pages": "meta.pages", "total": "meta.total",
		"continue": "true", "next": "meta.next", "next_header": "X-Next", "next_url": "links.next",
		"field": "ts", "initial": "2024-01-01T00:00:00Z", "overlap": "1h"}
	uses := map[string][]string{
		paging.StylePage:   {"param", "start", "total_pages", "total", "continue"},
		paging.StyleOffset: {"param", "total", "continue"},
		paging.StyleCursor: {"param", "total", "continue", "next", "next_header", "next_url"},
		paging.StyleLink:   {"total", "continue"},
		paging.StyleHWM:    {"param", "field", "initial", "overlap"},
		paging.StyleNone:   nil,
	}
	for _, r := range paging.StyleRules() {
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
