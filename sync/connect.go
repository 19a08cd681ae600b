package sync

import (
	"context"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// CheckConnectWith is validate --connect: it requests the job's first page
// with src (built by cmd/, with its auth installed), writing nothing, then
// opens and closes the target. Errors name the side, source or target.
func CheckConnectWith(ctx context.Context, job *Job, src contract.PageSource, openSink func(context.Context) (contract.Sink, error)) error {
	pg := &pager{job: job, src: src}
	from := ""
	if job.Incremental != nil {
		from = job.Incremental.Initial
	}
	u, err := pg.request(pg.start(job.Pagination.Initial), runWindow(job, from, time.Now()))
	if err != nil {
		return contract.Errorf(contract.Permanent, "source: %w", err)
	}
	if _, err := src.Fetch(ctx, u); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	s, err := openSink(ctx)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	return s.Close()
}
