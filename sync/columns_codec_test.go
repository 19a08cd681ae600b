package sync

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// The inferred columns the store keeps are the engine's encoding: a
// round trip keeps name, path, type and the type before a widening, and
// nil (no change) is the empty string the store reads as "keep".
func TestColumnsCodec(t *testing.T) {
	cols := []contract.Column{
		{Name: "id", Path: "id", Type: contract.TypeInteger},
		{Name: "qty", Path: "a.qty", Type: contract.TypeNumeric, Was: contract.TypeInteger},
	}
	enc := EncodeColumns(cols)
	if enc != `[{"name":"id","path":"id","type":"integer"},{"name":"qty","path":"a.qty","type":"numeric","was":"integer"}]` {
		t.Errorf("encoded %s: the stored JSON changed, which older state files hold", enc)
	}
	got, err := DecodeColumns(enc)
	if err != nil || !reflect.DeepEqual(got, cols) {
		t.Errorf("round trip = %+v, %v", got, err)
	}
	if EncodeColumns(nil) != "" || EncodeColumns([]contract.Column{}) != "[]" {
		t.Errorf("nil encodes as %q, none as %q", EncodeColumns(nil), EncodeColumns([]contract.Column{}))
	}
	if got, err := DecodeColumns(""); err != nil || got != nil {
		t.Errorf(`DecodeColumns("") = %v, %v`, got, err)
	}
}

// Saved columns the engine cannot decode fail the run before any page,
// naming the job and what is wrong (exit 1).
func TestBadSavedColumnsFailTheRun(t *testing.T) {
	rig := newEngineRig()
	rig.store.cols = `{"not":"a list"}`
	spec := "name: items\nsource:\n  url: http://api.test/items\n  records: data\n" +
		"pagination:\n" + cursorStyle +
		"target:\n  url: sqlite:out.db\n  table: items\n  key: [id]\n"
	job := testJob(t, spec)
	if !job.Infer {
		t.Fatal("the job does not infer its columns")
	}
	src := &fakeSource{records: "data", serve: cursorAPI(3, 3)}
	_, err := rig.engine(job, src).Run(context.Background(), Options{})
	if contract.ClassOf(err) != contract.Permanent || err == nil || !strings.Contains(err.Error(), "items") || !strings.Contains(err.Error(), "saved columns") {
		t.Errorf("run with undecodable saved columns: %v (exit %d), want exit 1 naming the job and its saved columns", err, contract.ClassOf(err))
	}
	if events := rig.trace.all(); len(events) != 0 {
		t.Errorf("the run wrote: %q", events)
	}
}
