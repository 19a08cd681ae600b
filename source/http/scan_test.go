package httpsource

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// scanSeeds are bodies and records paths where the one pass could place
// the records differently than gjson: escapes and brackets in strings,
// keys met again, the path through a value that is no object, scalars and
// nesting around the records.
var scanSeeds = []struct{ body, path string }{
	{`{"data":[{"id":1},{"id":2}]}`, "data"},
	{` { "data" : [ {"id":1} , 2 , "x\"]" , null , true , -1.5e3 , [ [] ] , {} ] } `, "data"},
	{`{"meta":{"data":[9]},"data":[{"a":"[{\\"},{"b":"\\\\"}]}`, "data"},
	{`{"data":[1],"data":[2]}`, "data"},
	{`{"d\u0061ta":[1],"data":[2]}`, "data"},
	{`{"data":{"items":[{"id":1}]},"items":[]}`, "data.items"},
	{`{"data":{"x":1},"data":{"items":[3]}}`, "data.items"},
	{`{"data":5,"data":{"items":[3]}}`, "data.items"},
	{`{"data":null}`, "data"},
	{`{"data":{"id":1}}`, "data"},
	{`{"data":"[1,2]"}`, "data"},
	{`{"other":[1]}`, "data"},
	{`{}`, "data"},
	{`[{"id":1},{"id":2}]`, ""},
	{`[{"data":[1]}]`, "data"},
	{`"text"`, "data"},
	{`[]`, ""},
	{`{"data":[]}`, "data"},
	{`{"a-b":{"$c":[{"x":[1,{"y":"}"}]}]}}`, "a-b.$c"},
	{`{"data":[{"id":1}]}`, "data.0"},
	// Invalid bodies that close more than they open: a key read at depth
	// -1 indexed the path's keys past their end (FuzzScanBody), a panic of
	// the fetch on a 2xx body such as this.
	{`],"`, ""},
	{`]],"x":[1]`, "x"},
	{`}{"data":[1]}`, "data"},
	// Keys the run reads met twice (dupkey.go), at the top level or
	// below, escaped or not.
	{`{"next":1,"data":[],"next":2}`, "data"},
	{`{"meta":{"has_more":1,"x":[{}],"has_more":2},"data":[]}`, "data"},
	{`{"m\u0065ta":{"has_more":1},"meta":{"has_more":2}}`, "data"},
	{`{"meta":{"has_more":true},"data":[{"meta":1,"meta":2}]}`, "data"},
	{`{"next":"a","meta":7,"next":{"x":1}}`, ""},
}

// checkScan compares what Fetch does with a body scanned once against
// what it did before (jsonDepthExceeds, then gjson for the records and the
// null check): the same depth verdict on any body; on a valid one, the
// same records (each field of each gjson.Result) or the same error, and
// the same null records value.
func checkScan(t *testing.T, body []byte, path string, limit int) {
	t.Helper()
	comps, _ := recordsComps(path)
	keys := newKeyTree([][2]string{{"source.records", path}, {"pagination.has_more", "meta.has_more"}, {"pagination.next", "next"}})
	sc := scanBodyKeys(body, comps, limit, keys)
	if want := jsonDepthExceeds(body, limit); sc.tooDeep != want {
		t.Fatalf("body %q limit %d: scan says too deep %v, jsonDepthExceeds %v", body, limit, sc.tooDeep, want)
	}
	if sc.tooDeep || !gjson.ValidBytes(body) {
		return
	}
	// The keys met twice: the same verdict from the scan as from gjson alone.
	if got, want := keys.duplicateKey(body, sc), keys.dup(gjson.ParseBytes(body), ""); (got == "") != (want == "") {
		t.Fatalf("body %q path %q: duplicate key %q, gjson alone says %q", body, path, got, want)
	}
	job := &idsync.Job{Spec: spec.Spec{Source: spec.Source{Records: path}}, Secrets: idsync.NewRedactor()}
	fe := &Fetcher{cfg: ConfigOf(job)}
	got, gerr := fe.recordsOf(body, sc)
	want, werr := fe.records(body)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("body %q path %q: error %v, want %v", body, path, gerr, werr)
	}
	if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q path %q:\n got %#v\nwant %#v", body, path, got, want)
	}
	if path != "" && sc.located {
		v := gjson.GetBytes(body, path)
		if sc.found != v.Exists() || sc.found && (body[sc.start] == 'n') != (v.Type == gjson.Null) {
			t.Fatalf("body %q path %q: scan found %v (null %v), gjson %v (%v)", body, path, sc.found, sc.found && body[sc.start] == 'n', v.Exists(), v.Type)
		}
	}
}

func TestScanBodyAgreesWithGJSON(t *testing.T) {
	for _, s := range scanSeeds {
		checkScan(t, []byte(s.body), s.path, MaxJSONDepth)
	}
	deep := strings.Repeat("[", 50) + strings.Repeat("]", 50)
	checkScan(t, []byte(`{"data":`+deep+`}`), "data", 49)
	checkScan(t, []byte(`{"data":`+deep+`}`), "data", 51)
	checkScan(t, []byte(`"[[[[`+`"`+deep), "", 10)
	checkScan(t, []byte(`x]]]]`+deep), "", 45)
	checkScan(t, []byte(`{"s":"\\\"[[[["}`+deep), "", 30)
}

// The one pass finds the records where gjson does without asking gjson:
// for a plain path, a page's records come from the scan.
func TestScanBodyLocatesPlainPaths(t *testing.T) {
	for _, s := range []struct{ body, path string }{
		{`{"data":[{"id":1},{"id":2}]}`, "data"},
		{`{"meta":{"data":[9]},"data":[{"id":1}]}`, "data"},
		{`{"data":{"items":[{"id":1}]}}`, "data.items"},
		{`[{"id":1}]`, ""},
	} {
		comps, ok := recordsComps(s.path)
		sc := scanBody([]byte(s.body), comps, MaxJSONDepth)
		if !ok || !sc.located || !sc.found || s.body[sc.start] != '[' {
			t.Errorf("body %s path %q: not located (%+v)", s.body, s.path, sc)
		}
	}
}

func FuzzScanBody(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s.body), s.path, 64)
	}
	f.Fuzz(func(t *testing.T, body []byte, path string, limit int) {
		if limit < 0 || limit > MaxJSONDepth {
			limit = MaxJSONDepth
		}
		if len(path) > 40 {
			return
		}
		checkScan(t, body, path, limit)
	})
}
