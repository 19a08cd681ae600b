package paging

import (
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// OwnEnd is what a page's own pagination style says about the end.
type OwnEnd int

const (
	// goesOn: the style goes on after this page.
	goesOn OwnEnd = iota
	// shortEnd: a short, non-empty page (page, offset, hwm): the end,
	// unless the API caps its pages below pagination.size.
	ShortEnd
	// styleEnd: the style's own end: an empty page, no next cursor, URL
	// or link, a page that makes no progress (hwm), the one page of none.
	StyleEnd
	// cappedTie: a full hwm page that made no progress under a page-size
	// cap idemsync adopted (decideEnd asks again at pagination.size).
	CappedTie
)

// StepIn is what a style's step sees of the page it fetched.
type StepIn struct {
	Pg   spec.Pagination    // the job's pagination block
	Pos  At                 // the page's position
	Resp *contract.Response // the page
	// size is the page size the API serves at pos (pager.size).
	Size int
	// hwmMax is the highest mark among the page's records (hwm style).
	HWMMax string
	// own and why are the verdict of the page's record count: goesOn,
	// or the end of an empty or a short page and why.
	Own OwnEnd
	Why string
	// checkpointURL is the form of a next URL kept in the checkpoint
	// (contract.PageSource.CheckpointURL); redact hides the job's secrets
	// in a message.
	CheckpointURL func(string) string
	Redact        func(string) string
}

// StepOut is what a style decided about the page: the position after it
// (pos itself when the style ends there), whether the style would end
// there and, when it would, why ("has no next cursor (at meta.next)").
type StepOut struct {
	Next At
	Own  OwnEnd
	Why  string
}
