package sync

import (
	"context"
	"fmt"
)

// CheckConnectWith is CheckConnect with the fetcher given (so that cmd/
// can install its auth first): it requests the job's first page with f,
// writing nothing, then opens and closes the target.
func CheckConnectWith(ctx context.Context, job *Job, f *Fetcher, openSink func(context.Context) (Sink, error)) error {
	pg := &pager{job: job, f: f}
	window := ""
	if job.Incremental != nil {
		window = job.Incremental.Initial
	}
	u, err := pg.url(pg.start(job.Pagination.Initial), window)
	if err != nil {
		return Errorf(ExitPermanent, "source: %w", err)
	}
	if _, err := f.Fetch(ctx, u); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	s, err := openSink(ctx)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	return s.Close()
}
