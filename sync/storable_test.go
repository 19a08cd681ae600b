package sync

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// A next cursor, next URL or Link that is not valid UTF-8 is refused
// (docs/job-file.md, "Pagination"): the checkpoint is JSON, which would
// store U+FFFD in its place, and a resumed run would ask the API for
// another page than the one the interrupted run was at.
func TestStepRefusesUnstorablePosition(t *testing.T) {
	tests := []struct {
		name, pag, body string
		header          []string
	}{
		{"cursor in body", "  style: cursor\n  param: after\n  next: meta.next\n", epData(1, 2, "\"meta\":{\"next\":\"c\x86\"}"), nil},
		{"cursor header", "  style: cursor\n  param: after\n  next_header: X-Next\n", epData(1, 2, ""), []string{"X-Next", "c\xff"}},
		{"next url", "  style: cursor\n  next_url: meta.next\n", epData(1, 2, "\"meta\":{\"next\":\"http://api.test/x?sig=s3cr3t&after=\xc3\"}"), nil},
		{"link", "  style: link\n", epData(1, 2, ""), []string{"Link", "<http://api.test/x?after=\x86>; rel=\"next\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := epPager(t, "data", tt.pag)
			resp, max := epResp(t, p, tt.body, tt.header...)
			out, err := p.step(p.start(""), resp, max)
			if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Fatalf("step: %v, next %#v; want an error naming invalid UTF-8", err, out.Next)
			}
			// The refused value is the API's, and may carry a credential
			// (a signed next URL): the error names the style, not the value.
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "api.test") {
				t.Errorf("the error prints the refused position: %v", err)
			}
			if contract.ClassOf(err) != contract.Permanent {
				t.Errorf("class %v, want permanent", contract.ClassOf(err))
			}
		})
	}
	// The same position in valid UTF-8 goes on.
	p, _ := epPager(t, "data", "  style: cursor\n  param: after\n  next: meta.next\n")
	resp, max := epResp(t, p, epData(1, 2, "\"meta\":{\"next\":\"c\u00e9\"}"))
	if out, err := p.step(p.start(""), resp, max); err != nil || out.Next != (paging.CursorAt{Cursor: "c\u00e9"}) {
		t.Errorf("valid UTF-8 cursor: %#v, %v", out.Next, err)
	}
}
