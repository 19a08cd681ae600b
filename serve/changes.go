package serve

import (
	"fmt"
	"net/http"
	"time"
)

// ChangesRequest is a read or an ack of a job's change feed
// (docs/serve.md, "The change feed"): the flags of `idemsync changes` and
// `changes ack` of the same names, as JSON.
type ChangesRequest struct {
	Consumer  string   `json:"consumer"`
	Resources []string `json:"resources"` // next
	Ops       []string `json:"ops"`       // next
	Limit     int      `json:"limit"`     // next; 0 the command's default
	Lease     string   `json:"lease"`     // next; a duration, "" the default
	Batch     string   `json:"batch"`     // ack
	Through   *int64   `json:"through"`   // ack; nil the whole batch
}

// changesFields are the fields each feed call takes.
var changesFields = map[string][]string{
	"next": {"consumer", "resources", "ops", "limit", "lease"},
	"ack":  {"consumer", "batch", "through"},
}

// changes answers POST /jobs/NAME/changes (`idemsync changes`, the
// consumer's next batch, leased) and POST /jobs/NAME/changes/ack.
func changesCall(action string) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		file, ok := s.job(w, r)
		if !ok {
			return
		}
		var req ChangesRequest
		if err := decodeFields(r, action, changesFields[action], &req); err != nil {
			writeBodyError(w, err)
			return
		}
		if req.Lease != "" {
			if _, err := time.ParseDuration(req.Lease); err != nil {
				writeError(w, http.StatusBadRequest, exitUsage, fmt.Sprintf("lease %q: want a duration such as 5m", req.Lease))
				return
			}
		}
		writeReply(w, s.cfg.Backend.Changes(r.Context(), file, action, req))
	}
}

// changesStatus answers GET /jobs/NAME/changes/status: `idemsync changes
// status`.
func (s *Server) changesStatus(w http.ResponseWriter, r *http.Request) {
	file, ok := s.job(w, r)
	if !ok {
		return
	}
	writeReply(w, s.cfg.Backend.Changes(r.Context(), file, "status", ChangesRequest{}))
}
