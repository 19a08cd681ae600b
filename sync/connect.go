package sync

import (
	"context"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// CheckConnectWith is validate --connect: it requests the job's first page
// with src (built by cmd/, with its auth installed), writing nothing, then
// opens the target and reports the schema changes the next run would make
// to its table (planSchema; saved are the job's inferred columns saved in
// the state, if any), and closes it. Errors name the side, source or
// target.
func CheckConnectWith(ctx context.Context, job *Job, src contract.PageSource, openSink func(context.Context) (contract.Sink, error), saved []contract.Column) (SchemaPlan, error) {
	pg := &pager{job: job, src: src}
	from := ""
	if job.Incremental != nil {
		from = job.Incremental.Initial
	}
	u, err := pg.request(pg.start(job.Pagination.Initial), runWindow(job, from, time.Now()))
	if err != nil {
		return SchemaPlan{}, contract.Errorf(contract.Permanent, "source: %w", err)
	}
	resp, err := src.Fetch(ctx, u)
	if err != nil {
		return SchemaPlan{}, fmt.Errorf("source: %w", err)
	}
	s, err := openSink(ctx)
	if err != nil {
		return SchemaPlan{}, fmt.Errorf("target: %w", err)
	}
	plan, err := planSchema(ctx, job, s, saved, resp.Records)
	if err != nil {
		_ = s.Close()
		return plan, fmt.Errorf("target: %w", err)
	}
	return plan, s.Close()
}
