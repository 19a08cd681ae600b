package cmd

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	idsync "github.com/idemsync/idemsync/sync"
)

// progress draws the run's progress bar on stderr. It exists only when
// stderr is a terminal and neither --quiet nor --json... (--json keeps
// stdout clean; the bar is on stderr, so it stays).
type progress struct {
	bar   *progressbar.ProgressBar
	start time.Time
	total int64
}

func newProgress(ios *IOStreams, g *globalOpts, job *idsync.Job) *progress {
	if !ios.ErrTTY || g.quiet {
		return nil
	}
	return newProgressTo(ios, job)
}

// newProgressTo builds a bar writing to ios.ErrOut whatever it is (tests
// render it into a buffer).
func newProgressTo(ios *IOStreams, job *idsync.Job) *progress {
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(ios.ErrOut),
		progressbar.OptionSetDescription(job.Name),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("pages"),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return &progress{bar: bar, start: time.Now()}
}

func (p *progress) page(ev idsync.PageEvent) {
	if ev.TotalPgs > 0 && ev.TotalPgs != p.total {
		p.total = ev.TotalPgs
		p.bar.ChangeMax64(ev.TotalPgs)
	}
	recs := ev.Total.Inserted + ev.Total.Updated + ev.Total.Unchanged
	rate := float64(recs) / max(time.Since(p.start).Seconds(), 0.001)
	p.bar.Describe(fmt.Sprintf("%s · %d records · %.0f rec/s · at %s", "sync", recs, rate, ev.Position))
	_ = p.bar.Set64(ev.Pages)
}

func (p *progress) retry(ev idsync.RetryEvent) {
	p.bar.Describe(fmt.Sprintf("%s, retrying in %s", ev.Reason, ev.Wait.Round(time.Second)))
}

func (p *progress) finish() {
	_ = p.bar.Finish()
}
