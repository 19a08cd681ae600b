package sync

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// status without the job file describes a stored position as its own
// style does.
func TestGuessStyleDescribes(t *testing.T) {
	cases := []struct{ style, value, want string }{
		{paging.StylePage, "3", "page 3"},
		{paging.StyleOffset, "40", "offset 40"},
		{paging.StyleCursor, "abc", "cursor abc"},
		{paging.StyleCursor, "https://api.example.com/v1/orders?after=9", "https://api.example.com/v1/orders?after=9"},
		{paging.StyleLink, "https://api.example.com/v1/orders?page=2", "https://api.example.com/v1/orders?page=2"},
		{paging.StyleHWM, "2024-05-01T10:00:00Z", "mark 2024-05-01T10:00:00Z"},
	}
	for _, c := range cases {
		pos, err := paging.ParsePosition(c.style, c.value)
		if err != nil {
			t.Fatalf("ParsePosition(%s, %q): %v", c.style, c.value, err)
		}
		info := &contract.RunInfo{Job: "orders", Checkpoint: pos.Encode(), Status: contract.RunCompleted}
		for _, style := range []string{c.style, ""} {
			if got := RunResult(info, style, "", NewRedactor()).Checkpoint; got != c.want {
				t.Errorf("%s %q with style %q: checkpoint %q, want %q", c.style, c.value, style, got, c.want)
			}
		}
	}
	if got := RunResult(&contract.RunInfo{Checkpoint: paging.Position{}.Encode()}, "", "", NewRedactor()).Checkpoint; got != "start" {
		t.Errorf("zero position without style: %q, want start", got)
	}
	if _, err := paging.ParsePosition(paging.StyleNone, "1"); err == nil || !strings.Contains(err.Error(), "style none has no positions") {
		t.Errorf("ParsePosition(none): %v, want no positions to replay from", err)
	}
}

// Offsets advance by records (a page fetched) or by pages of a size (pages
// fetched concurrently), from one function.
func TestOffsetArithmetic(t *testing.T) {
	o := paging.OffsetPaging{}
	if got := o.Ahead(paging.OffsetAt{Offset: 40, Size: 7}, 3, 7); got != (paging.OffsetAt{Offset: 61, Size: 7}) {
		t.Errorf("ahead = %+v, want offset 61 size 7", got)
	}
	if got, ok := o.SeenThrough(spec.Pagination{}, paging.OffsetAt{Offset: 40}, 10, 4); !ok || got != 44 {
		t.Errorf("seenThrough = %d, %v; want 44, true", got, ok)
	}
	out, err := o.Step(paging.StepIn{Pos: paging.OffsetAt{Offset: 40, Size: 7}, Resp: &contract.Response{Raw: 5}, Own: paging.ShortEnd, Why: "is short"})
	if err != nil || out != (paging.StepOut{Next: paging.OffsetAt{Offset: 45, Size: 7}, Own: paging.ShortEnd, Why: "is short"}) {
		t.Errorf("step = %+v, %v; want offset 45 size 7, shortEnd", out, err)
	}
}
