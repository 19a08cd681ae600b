package serve

import (
	"encoding/json"
	"net/http"
)

// The exit codes of the command line (docs/operations.md, "Exit codes"),
// as a Reply carries them.
const (
	exitOK          = 0
	exitPermanent   = 1
	exitUsage       = 2
	exitTransient   = 3
	exitLocked      = 4
	exitNothing     = 5
	exitInterrupted = 130
)

// httpStatus maps each exit code to the HTTP status of its reply
// (docs/serve.md, "Statuses"): the body says the same as the CLI's --json
// output, the status lets an HTTP client branch without reading it.
var httpStatus = map[int]int{
	exitOK:          http.StatusOK,
	exitPermanent:   http.StatusInternalServerError,
	exitUsage:       http.StatusBadRequest,
	exitTransient:   http.StatusServiceUnavailable,
	exitLocked:      http.StatusConflict,
	exitNothing:     http.StatusConflict,
	exitInterrupted: http.StatusServiceUnavailable,
}

// statusOf is the HTTP status of exit code code; a code outside the table
// is a permanent failure's.
func statusOf(code int) int {
	if s, ok := httpStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the server's own error (no such job, no token, a bad
// request body): the fields every CLI --json error object has.
type errorBody struct {
	Job      string `json:"job,omitempty"`
	Status   string `json:"status"` // "failed", or the CLI's word for the class ("locked")
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// writeError answers status with an error object of exit code code.
func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, errorBody{Status: "failed", Error: msg, ExitCode: code})
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"status":"failed","error":"encoding the reply failed","exit_code":1}`)
	}
	writeBody(w, status, append(b, '\n'))
}

// writeBody answers status with the JSON body b.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// conflicts are the status words of the change feed's refusals that the
// consumer resolves itself, exit 1 on the command line: a stale ack and a
// gap (docs/serve.md, "Statuses"). They answer 409, not a permanent
// failure's 500: nothing is broken, the consumer reads again or resets.
var conflicts = map[string]bool{"stale": true, "gap": true}

// replyStatus is the HTTP status of r: its exit code's, or 409 for a
// permanent failure whose status word is one of conflicts.
func replyStatus(r Reply) int {
	if r.Code == exitPermanent {
		var body struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(r.Body, &body) == nil && conflicts[body.Status] {
			return http.StatusConflict
		}
	}
	return statusOf(r.Code)
}

// writeReply answers with what the CLI printed, under its status
// (replyStatus).
func writeReply(w http.ResponseWriter, r Reply) {
	writeBody(w, replyStatus(r), r.Body)
}
