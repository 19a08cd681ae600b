package sync

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

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
		info := &contract.RunInfo{Job: "orders", Checkpoint: pos.Encode(), Status: contract.RunCompleted}
		for _, style := range []string{c.style, ""} {
			if got := RunResult(info, style, "", NewRedactor()).Checkpoint; got != c.want {
				t.Errorf("%s %q with style %q: checkpoint %q, want %q", c.style, c.value, style, got, c.want)
			}
		}
	}
	if got := RunResult(&contract.RunInfo{Checkpoint: Position{}.Encode()}, "", "", NewRedactor()).Checkpoint; got != "start" {
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
	if got := o.ahead(offsetAt{Offset: 40, Size: 7}, 3, 7); got != (offsetAt{Offset: 61, Size: 7}) {
		t.Errorf("ahead = %+v, want offset 61 size 7", got)
	}
	if got, ok := o.seenThrough(spec.Pagination{}, offsetAt{Offset: 40}, 10, 4); !ok || got != 44 {
		t.Errorf("seenThrough = %d, %v; want 44, true", got, ok)
	}
	out, err := o.step(stepIn{pos: offsetAt{Offset: 40, Size: 7}, resp: &contract.Response{Raw: 5}, own: shortEnd, why: "is short"})
	if err != nil || out != (stepOut{next: offsetAt{Offset: 45, Size: 7}, own: shortEnd, why: "is short"}) {
		t.Errorf("step = %+v, %v; want offset 45 size 7, shortEnd", out, err)
	}
}
