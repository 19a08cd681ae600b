package sync

import (
	"time"

	"github.com/idemsync/idemsync/sync/paging"
)

// The saved mark of an incremental run (docs/job-file.md, "incremental";
// docs/guarantees.md, "High-water marks at the boundary").
//
// An incremental window filters a walk that is ordered by something other
// than the mark (an id cursor, a next link, page numbers). A record updated
// while such a walk runs may sit behind the walk's position: this run never
// reads it, and its new mark may be lower than the highest mark the run did
// read (a record updated later, further along the walk). Saving that
// highest mark would put the missed update behind the next run's window
// for good. So for timestamp marks the saved mark never passes the run's
// start, taken at whole seconds (an API that stamps marks at second
// precision writes an update made during the run's first second as that
// second): every record changed after the run began has a mark at or after
// it, and the next run reads it again. A clock skew between the API and
// this machine is what `overlap` is for. Numeric marks have no clock to
// cap them: they are saved as seen (docs/guarantees.md says so).

// incrementalSavedMark returns the mark an incremental run that started at
// started saves when it completes, given the highest mark it committed.
func incrementalSavedMark(maxMark string, started time.Time) string {
	t, ok := paging.ParseTime(maxMark)
	if !ok || started.IsZero() {
		return maxMark
	}
	ceiling := started.UTC().Truncate(time.Second)
	if t.After(ceiling) {
		return paging.FormatLike(ceiling, maxMark)
	}
	return maxMark
}
