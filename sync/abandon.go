package sync

import (
	"context"

	"github.com/idemsync/idemsync/contract"
)

// abandonUnfinished marks the job's unfinished run, if any, abandoned. begin
// calls it only once the new run can start (the target opened and
// prepared), so a replay or --restart that cannot reach the database
// leaves the unfinished run resumable.
func (e *Engine) abandonUnfinished(ctx context.Context) error {
	prev, err := e.Store.Unfinished(ctx, e.Job.Name)
	if err != nil || prev == nil {
		return err
	}
	return e.Store.FinishRun(ctx, prev.ID, contract.RunAbandoned, "", "")
}
