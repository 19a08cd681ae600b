package sync

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// legacyPositions are positions exactly as builds before the versioned
// format wrote them to state files (collected from that code: a style's
// fields, windows and parents, and the windows in flight as JSON inside
// the JSON). State files in the field hold them: every build must read
// them. Each comes with how status describes it with the job's style and
// without the job file (the style guessed from the fields set).
var legacyPositions = []struct{ style, stored, describe, guessed string }{
	{"page", `{"page":3}`, "page 3", "page 3"},
	{"page", `{"page":3,"size":7}`, "page 3", "page 3"},
	{"page", `{"page":1,"end":true}`, "page 1 (end)", "page 1 (end)"},
	{"page", `{}`, "page 0", "start"},
	{"offset", `{"offset":40}`, "offset 40", "offset 40"},
	{"offset", `{}`, "offset 0", "start"},
	{"offset", `{"offset":40,"size":7}`, "offset 40", "offset 40"},
	{"cursor", `{"cursor":"abc"}`, "cursor abc", "cursor abc"},
	{"cursor", `{"cursor":"42"}`, "cursor 42", "cursor 42"},
	{"cursor", `{"url":"https://api.example.com/v1/orders?after=9\u0026token=s3cret"}`, "https://api.example.com/v1/orders?after=9&token=[redacted]", "https://api.example.com/v1/orders?after=9&token=[redacted]"},
	{"cursor", `{}`, "first page", "start"},
	{"link", `{"url":"https://api.example.com/v1/orders?page=2"}`, "https://api.example.com/v1/orders?page=2", "https://api.example.com/v1/orders?page=2"},
	{"link", `{}`, "first page", "start"},
	{"hwm", `{"mark":"2024-05-01T10:00:00Z","size":50}`, "mark 2024-05-01T10:00:00Z", "mark 2024-05-01T10:00:00Z"},
	{"hwm", `{"mark":"1714557600"}`, "mark 1714557600", "mark 1714557600"},
	{"hwm", `{}`, "no mark", "start"},
	{"none", `{}`, "start", "start"},
	{"none", `{"end":true}`, "start (end)", "start (end)"},
	{"page", `{"page":5,"win":2,"fly":"{\"pos\":{\"3\":{\"page\":2},\"5\":{\"page\":1,\"size\":10}},\"done\":[4],\"started\":6}"}`, "window 3, page 5 (+2 windows in flight)", "window 3, page 5 (+2 windows in flight)"},
	{"offset", `{"fly":"{\"done\":[1],\"started\":3}"}`, "window 1, offset 0", "window 1, start"},
	{"hwm", `{"end":true,"win":3}`, "window 4, no mark (end)", "window 4, start (end)"},
	{"cursor", `{"cursor":"c9","win":1,"fly":"{\"pos\":{\"2\":{\"cursor\":\"c2\"}},\"started\":3,\"rows\":{\"1\":\"{\\\"id\\\":\\\"42\\\"}\",\"2\":\"{\\\"id\\\":\\\"43\\\"}\"},\"last\":\"{\\\"id\\\":\\\"43\\\"}\",\"since\":\"2024-05-01T00:00:00Z\"}","parent":"id=42"}`, "parent 2 (id=42), cursor c9 (+1 parents in flight)", "parent 2 (id=42), cursor c9 (+1 parents in flight)"},
	{"link", `{"fly":"{\"started\":1,\"rows\":{\"0\":\"{\\\"id\\\":\\\"7\\\"}\"},\"last\":\"{\\\"id\\\":\\\"7\\\"}\"}","parent":"id=7"}`, "parent 1 (id=7), first page", "parent 1 (id=7), start"},
	{"page", `{"end":true,"win":4,"parent":"id=50"}`, "parent 5 (id=50) (end)", "parent 5 (id=50) (end)"},
	{"page", `{"end":true,"parent":"-"}`, "no parent rows (end)", "no parent rows (end)"},
}

// Every position an older build wrote decodes and reads as it did.
func TestLegacyPositionsDecode(t *testing.T) {
	red := NewRedactor()
	red.Add("s3cret")
	for _, c := range legacyPositions {
		p, err := paging.DecodePosition(c.style, c.stored)
		if err != nil {
			t.Errorf("%s %s: %v", c.style, c.stored, err)
			continue
		}
		if got := p.Describe(c.style, red); got != c.describe {
			t.Errorf("%s %s: describes as %q, want %q", c.style, c.stored, got, c.describe)
		}
		if got := RunResult(&contract.RunInfo{Checkpoint: c.stored}, "", "", red).Checkpoint; got != c.guessed {
			t.Errorf("%s %s without the job file: %q, want %q", c.style, c.stored, got, c.guessed)
		}
	}
}

// An unfinished run an older build left with a format 1 checkpoint is
// continued at that page, and the pages it commits are stored in the
// current format.
func TestContinueFromLegacyCheckpoint(t *testing.T) {
	for _, c := range []struct {
		name, pagination, stored, first string
		serve                           func(context.Context, *url.URL) (string, error)
		rows                            int
	}{
		{"page", pageStyle, `{"page":3}`, "http://api.test/items?page=3&per_page=2", pagesAPI(7), 3},
		{"cursor", cursorStyle, `{"cursor":"4"}`, "http://api.test/items?after=4", cursorAPI(7, 3), 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			rig := newEngineRig()
			job := engineJob(t, "", c.pagination)
			if _, err := rig.store.StartRun(context.Background(), &contract.RunInfo{Job: job.Name, Kind: contract.KindRun, Status: contract.RunPartial,
				Checkpoint: c.stored, Identity: job.Identity().Encode()}); err != nil {
				t.Fatal(err)
			}
			src := &fakeSource{records: "data", serve: c.serve}
			res, err := rig.engine(job, src).Run(context.Background(), Options{})
			if err != nil || res.Status != contract.RunCompleted || !res.Resumed {
				t.Fatalf("run: %+v, %v; want the old run continued and completed", res, err)
			}
			if len(src.urls) == 0 || src.urls[0] != c.first {
				t.Errorf("requests %q, want the checkpoint's page %s first", src.urls, c.first)
			}
			if n := rig.sink.count(); n != c.rows {
				t.Errorf("%d rows, want %d (the pages from the checkpoint on)", n, c.rows)
			}
			pages, err := rig.store.Pages(context.Background(), res.RunID)
			if err != nil || len(pages) == 0 {
				t.Fatalf("pages %v, %v", pages, err)
			}
			for _, p := range pages {
				if !strings.HasPrefix(p.Position, `{"v":2,`) {
					t.Errorf("page stored at %s, want format 2", p.Position)
				}
			}
		})
	}
}
