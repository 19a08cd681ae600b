package httpsource

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"

	"github.com/tidwall/gjson"
)

// jsonDepth is a reference for jsonDepthExceeds: the nesting depth of valid
// JSON, walked recursively with gjson (only called on shallow input).
func jsonDepth(v gjson.Result) int {
	if !v.IsArray() && !v.IsObject() {
		return 0
	}
	deepest := 0
	v.ForEach(func(_, child gjson.Result) bool {
		deepest = max(deepest, jsonDepth(child))
		return true
	})
	return deepest + 1
}

// FuzzRecords feeds arbitrary bodies, records paths and error paths through
// what Fetch does with a 2xx body: the depth guard, JSON validation, the
// error_path lookup and the records extraction. None may panic; records
// are the elements of an array; a failure names the records path; the depth
// guard agrees with a recursive walk.
func FuzzRecords(f *testing.F) {
	f.Add([]byte(`{"data":[{"id":1},{"id":2}]}`), "data", "error")
	f.Add([]byte(`{"data":{"items":[{"id":1}]},"error":null}`), "data.items", "error")
	f.Add([]byte(`{"data":{"id":1}}`), "data", "")
	f.Add([]byte(`[{"id":1,"a":[[["\"]"]]]}]`), "", "0.a")
	f.Add([]byte(`{"a":[{"b":[1,2]},{"b":[3]}]}`), "a.#.b", "a.#(b>1)")
	f.Add([]byte(`{"x":"[[{{\\"}`), "x|@reverse", "@this")
	f.Add([]byte(`{"data":[1,2,3]}`), "data.@reverse", `..0`)
	f.Fuzz(func(t *testing.T, body []byte, path, errPath string) {
		if jsonDepthExceeds(body, MaxJSONDepth) || !gjson.ValidBytes(body) {
			return // Fetch refuses these before any path is used
		}
		if d := jsonDepth(gjson.ParseBytes(body)); d <= 64 {
			if jsonDepthExceeds(body, d) || (d > 0 && !jsonDepthExceeds(body, d-1)) {
				t.Fatalf("depth guard disagrees with the walk (depth %d) on %q", d, body)
			}
		}
		job := &idsync.Job{Spec: spec.Spec{Source: spec.Source{Records: path, ErrorPath: errPath}}, Secrets: idsync.NewRedactor()}
		fe := &Fetcher{cfg: ConfigOf(job)}
		_ = gjson.GetBytes(body, errPath).String()
		recs, err := fe.records(body)
		if err != nil {
			if path != "" && !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name records path %q", err, path)
			}
			return
		}
		for i, r := range recs {
			if r.Raw == "" || !gjson.Valid(r.Raw) {
				t.Fatalf("record %d of %q at %q is not JSON: %q", i, body, path, r.Raw)
			}
		}
	})
}
