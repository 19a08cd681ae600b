package jobfile

import (
	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
	"github.com/idemsync/idemsync/sync/paging"

	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestNextLink(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{`<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last"`}, "https://api.github.com/x?page=2"},
		{[]string{`<https://a/x?page=5>; rel="last", <https://a/x?page=2>; rel=next`}, "https://a/x?page=2"},
		{[]string{`</items?after=abc>; rel="next"`}, "/items?after=abc"},
		{[]string{`<https://a/1>; rel="prev"`, `<https://a/3>; rel="next last"`}, "https://a/3"},
		{[]string{`<https://a/x?q=a,b>; title="a, b"; rel="next"`}, "https://a/x?q=a,b"},
		{[]string{`<https://a/1>; rel="prev"`}, ""},
		{nil, ""},
		{[]string{`garbage`}, ""},
		{[]string{`<https://a/2>; REL="NEXT"`}, "https://a/2"},
	}
	for _, tt := range tests {
		if got := paging.NextLink(tt.in); got != tt.want {
			t.Errorf("NextLink(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzNextLink(f *testing.F) {
	f.Add(`<https://a/x?page=2>; rel="next", <https://a/x?page=5>; rel="last"`)
	f.Add(`<a>; rel=next,,<`)
	f.Fuzz(func(t *testing.T, h string) {
		got := paging.NextLink([]string{h})
		if got != "" && !containsStr(h, got) {
			t.Fatalf("NextLink(%q) = %q, not a substring", h, got)
		}
	})
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestBackoff(t *testing.T) {
	min, max := 100*time.Millisecond, time.Second
	for n := 0; n < 10; n++ {
		for i := 0; i < 50; i++ {
			d := idsync.Backoff(min, max, n, 0, false)
			ceil := min << n
			if ceil > max {
				ceil = max
			}
			if d < min || d > ceil {
				t.Fatalf("Backoff(n=%d) = %v, outside [%v, %v]", n, d, min, ceil)
			}
		}
	}
	if d := idsync.Backoff(min, max, 0, 5*time.Second, true); d != max {
		t.Errorf("Retry-After not capped by max_wait: %v", d)
	}
	if d := idsync.Backoff(min, max, 0, 300*time.Millisecond, true); d != 300*time.Millisecond {
		t.Errorf("Retry-After not honoured: %v", d)
	}
}

func TestMarks(t *testing.T) {
	if n, _ := paging.CheckMark(" 2024-01-01T02:00:00.000+02:00 "); n != "2024-01-01T02:00:00.000+02:00" {
		t.Errorf("CheckMark rewrote the mark: %q", n)
	}
	if paging.CompareMarks("2024-01-01T00:00:00Z", "2024-01-01T01:00:00+02:00") <= 0 {
		t.Error("offsets not compared as instants")
	}
	if paging.CompareMarks("9", "10") >= 0 {
		t.Error("numbers compared as strings")
	}
	if m, _ := paging.SubtractOverlap("2024-01-01T00:10:00Z", "10m"); m != "2024-01-01T00:00:00Z" {
		t.Errorf("overlap = %q", m)
	}
	if m, _ := paging.SubtractOverlap("100", "5"); m != "95" {
		t.Errorf("numeric overlap = %q", m)
	}
	if _, err := paging.CheckMark("yesterday"); err == nil {
		t.Error("garbage mark accepted")
	}
}

func TestConvert(t *testing.T) {
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		json string
		typ  contract.ColumnType
		want any
		bad  bool
	}{
		{`"a"`, contract.TypeText, "a", false},
		{`5`, contract.TypeText, "5", false},
		{`42`, contract.TypeInteger, int64(42), false},
		{`"42"`, contract.TypeInteger, int64(42), false},
		{`42.0`, contract.TypeInteger, int64(42), false},
		{`42.5`, contract.TypeInteger, nil, true},
		{`9223372036854775808`, contract.TypeInteger, nil, true},
		{`1.5`, contract.TypeReal, 1.5, false},
		{`"x"`, contract.TypeReal, nil, true},
		{`12345678901234567890.123456789`, contract.TypeNumeric, "12345678901234567890.123456789", false},
		{`"12.50"`, contract.TypeNumeric, "12.50", false},
		{`"12,50"`, contract.TypeNumeric, nil, true},
		{`true`, contract.TypeBoolean, true, false},
		{`"false"`, contract.TypeBoolean, false, false},
		{`"maybe"`, contract.TypeBoolean, nil, true},
		{`"2024-01-01T02:00:00+02:00"`, contract.TypeTimestamp, ts, false},
		{`"2024-01-01"`, contract.TypeTimestamp, ts, false},
		{`"01/01/2024"`, contract.TypeTimestamp, nil, true},
		{`{"a":[1]}`, contract.TypeJSON, `{"a":[1]}`, false},
		{`null`, contract.TypeInteger, nil, false},
	}
	for _, tt := range tests {
		got, err := idsync.Convert(gjson.Parse(tt.json), tt.typ)
		if (err != nil) != tt.bad {
			t.Errorf("Convert(%s, %s) error = %v, want bad=%v", tt.json, tt.typ, err, tt.bad)
			continue
		}
		if tg, ok := got.(time.Time); ok {
			if !tg.Equal(tt.want.(time.Time)) {
				t.Errorf("Convert(%s, %s) = %v, want %v", tt.json, tt.typ, got, tt.want)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("Convert(%s, %s) = %#v, want %#v", tt.json, tt.typ, got, tt.want)
		}
	}
}

func TestMapperBadRecordsAndDedupe(t *testing.T) {
	tbl := &contract.Table{Key: []string{"id"}, Columns: []contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "n", Path: "n", Type: contract.TypeText}}}
	m := idsync.Mapper{Table: tbl}
	if _, err := m.Map(3, gjson.Parse(`{"n":"x"}`)); err == nil || err.Error() != "record 3: column id: key is missing or null (path id)" {
		t.Errorf("missing key: %v", err)
	}
	a, _ := m.Map(0, gjson.Parse(`{"id":1,"n":"a"}`))
	b, _ := m.Map(1, gjson.Parse(`{"id":2,"n":"b"}`))
	c, _ := m.Map(2, gjson.Parse(`{"id":1,"n":"c"}`))
	rows, dropped := contract.Dedupe(tbl, []contract.Row{a, b, c})
	if dropped != 1 || len(rows) != 2 || rows[1].Values[1] != "c" {
		t.Errorf("dedupe = %+v, %d", rows, dropped)
	}
	if a.Hash == c.Hash {
		t.Error("different content, same hash")
	}
	inf := &contract.Table{Key: []string{"id"}}
	mi := idsync.Mapper{Table: inf, Infer: true}
	rec := gjson.Parse(`{"id":1,"price":1.50,"tags":["a"],"ok":true,"a.b":"dot","nil":null}`)
	if !mi.InferPage([]gjson.Result{rec}) {
		t.Fatal("no column inferred")
	}
	r, err := mi.Map(0, rec)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]contract.ColumnType{}
	for _, c := range inf.Columns {
		types[c.Name] = c.Type
	}
	want := map[string]contract.ColumnType{"id": contract.TypeInteger, "price": contract.TypeNumeric, "tags": contract.TypeJSON, "ok": contract.TypeBoolean, "a.b": contract.TypeText}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("inferred %s = %q, want %q (all: %v)", k, types[k], v, types)
		}
	}
	if len(r.Values) != len(inf.Columns) || r.Values[len(r.Values)-1] != "dot" {
		t.Errorf("values = %v", r.Values)
	}
	// A key column is never widened: a value it cannot take is a bad record.
	clash := gjson.Parse(`{"id":"abc"}`)
	if mi.InferPage([]gjson.Result{clash}) {
		t.Errorf("a key column was widened: %+v", inf.Columns)
	}
	if _, err := mi.Map(1, clash); err == nil {
		t.Error("type clash in the key not a bad record")
	}
}
