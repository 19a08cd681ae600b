package sync

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// pager knows one pagination style: which URL a position requests, and
// which position follows a fetched page.
type pager struct {
	job *Job
	src contract.PageSource
	log *slog.Logger // warnings about the walk
}

// style is the job's pagination style.
func (p *pager) style() paging.Style { return paging.Of(p.job.Pagination.Style) }

// start returns the position of a new run's first page. mark is the hwm
// style's starting mark (saved mark minus overlap, or initial).
func (p *pager) start(mark string) paging.Position {
	return paging.Position{At: p.style().Start(p.job.Pagination, mark)}
}

// size is the page size the API serves at pos: the size it was found to
// cap pages at, else pagination.size (0 when unknown).
func (p *pager) size(pos paging.Position) int {
	if n := pos.Size(); n > 0 {
		return n
	}
	return p.job.Pagination.Size
}

// step returns what the style alone says of the page fetched at pos: the
// position after it and whether it would end there (stepOut). hwmMax is
// the highest mark among the page's records (hwm style). It returns an
// error for a page that can neither end nor progress. The end decision
// (decideEnd) weighs this against every other signal.
func (p *pager) step(pos paging.Position, resp *contract.Response, hwmMax string) (paging.StepOut, error) {
	pg := p.job.Pagination
	in := paging.StepIn{Pg: pg, Pos: pos.At, Resp: resp, Size: p.size(pos), HWMMax: hwmMax,
		CheckpointURL: p.src.CheckpointURL, Redact: p.job.Secrets.Redact}
	switch n := resp.Raw; {
	case n == 0:
		in.Own, in.Why = paging.StyleEnd, "is empty"
	case in.Size > 0 && n < in.Size:
		in.Own, in.Why = paging.ShortEnd, fmt.Sprintf("is short (%d of %d records)", n, in.Size)
	}
	if !paging.Known(pg.Style) {
		return paging.StepOut{}, fmt.Errorf("unknown pagination style %q", pg.Style)
	}
	// The style compares the API's next position with the one it was
	// asked with (a keyset API ending on its own cursor): as the API gave
	// both, its secrets in them.
	var err error
	if in.Pos, err = p.unseal(in.Pos); err != nil {
		return paging.StepOut{}, err
	}
	out, err := p.style().Step(in)
	if err == nil {
		// The API may echo a secret into the next position: the
		// checkpoint stores a marker in its place (request puts it back).
		out.Next = paging.MapText(out.Next, p.job.Secrets.Seal)
		err = paging.Storable(out.Next)
	}
	return out, err
}

// unseal returns at with the secrets Seal took out of it put back, as the
// API gave it.
func (p *pager) unseal(at paging.At) (paging.At, error) {
	var unsealed error
	at = paging.MapText(at, func(v string) string {
		out, err := p.job.Secrets.Unseal(v)
		if err != nil {
			unsealed = err
		}
		return out
	})
	if unsealed != nil {
		return nil, contract.Errorf(contract.Permanent, "%v: run with --restart", unsealed)
	}
	return at, nil
}

var _ = http.StatusOK
