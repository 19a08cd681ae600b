package cmd

import (
	"fmt"
	"io"
	"strings"
	gosync "sync"
	"time"

	"github.com/schollz/progressbar/v3"

	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// progress draws a run's progress bar on stderr: pages done (of the total
// when the API tells it through pagination.total_pages), records, records
// per second, the position just committed, and a retry being waited for.
// It exists only when stderr is a terminal and --quiet is off; --json does
// not hide it, since it never touches stdout.
//
// Log lines go through writer, which takes the bar off the line, prints
// the log line and draws the bar again below it, so that logs scroll above
// a bar that stays on the last line. All drawing happens under mu: page
// events come from the committer, retries from the fetchers, logs from
// both.
type progress struct {
	mu    gosync.Mutex
	bar   *progressbar.ProgressBar
	name  string
	start time.Time
	now   func() time.Time
	total int64  // total pages, 0 when unknown
	pages int64  // pages committed in this run (a continued run included)
	recs  int64  // records written in this run (a continued run included)
	seen  int64  // records committed since this process started: the rate
	pos   string // position of the last committed page
	note  string // retry being waited for, cleared by the next page
}

// newProgress returns the bar for a run, or nil when stderr is not a
// terminal or --quiet is set.
func newProgress(ios *IOStreams, g *globalOpts, job *idsync.Job) *progress {
	if !ios.ErrTTY || g.quiet {
		return nil
	}
	return newProgressTo(ios.ErrOut, job.Name)
}

// newProgressTo builds a bar writing to w whatever w is (tests render it
// into a buffer).
func newProgressTo(w io.Writer, name string) *progress {
	p := &progress{name: name, now: time.Now}
	p.start = p.now()
	p.bar = progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(name+" · starting"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowTotalBytes(false), // "(12)" until the total is known
		progressbar.OptionSetItsString("pages"),
		progressbar.OptionSpinnerType(14),
		// No spinner goroutine: every draw happens under p.mu, on an event.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
	)
	_ = p.bar.RenderBlank()
	return p
}

// page shows a committed page.
func (p *progress) page(ev idsync.PageEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pages, p.pos, p.note = ev.Pages, ev.Position, ""
	p.recs = ev.Total.Inserted + ev.Total.Updated + ev.Total.Unchanged
	p.seen += int64(ev.Records)
	if t := max(ev.TotalPgs, 0); t != p.total && t > 0 {
		p.total = t
		progressbar.OptionShowTotalBytes(true)(p.bar) // "(12/40)"
		p.bar.ChangeMax64(max(t, p.pages))
	} else if p.total > 0 && p.pages > p.total { // the API's total grew
		p.total = p.pages
		p.bar.ChangeMax64(p.total)
	}
	p.bar.Describe(p.describe())
	_ = p.bar.Set64(p.pages)
}

// retry shows a retry being waited for, until the next page commits.
func (p *progress) retry(ev httpsource.RetryEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	reason := ev.Reason
	if strings.HasPrefix(reason, "HTTP 429") {
		reason = "rate limited"
	}
	p.note = fmt.Sprintf("%s, retrying in %s", reason, waitText(ev.Wait))
	p.bar.Describe(p.describe())
}

// describe is the text before the bar; callers hold p.mu.
func (p *progress) describe() string {
	parts := []string{p.name}
	if p.pos != "" {
		parts = append(parts, p.pos)
	}
	rate := float64(p.seen) / max(p.now().Sub(p.start).Seconds(), 0.001)
	parts = append(parts, fmt.Sprintf("%d records", p.recs), fmt.Sprintf("%.0f rec/s", rate))
	if p.note != "" {
		parts = append(parts, p.note)
	}
	return strings.Join(parts, " · ")
}

// finish erases the bar.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Finish()
}

// writer returns w wrapped so that each write (a log line) is printed above
// the bar.
func (p *progress) writer(w io.Writer) io.Writer { return &barWriter{p: p, w: w} }

type barWriter struct {
	p *progress
	w io.Writer
}

func (b *barWriter) Write(data []byte) (int, error) {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	if b.p.bar.IsFinished() {
		return b.w.Write(data)
	}
	_ = b.p.bar.Clear()
	n, err := b.w.Write(data)
	_ = b.p.bar.RenderBlank()
	return n, err
}

// waitText rounds a retry wait for people: 4s, 1m30s, 250ms.
func waitText(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
