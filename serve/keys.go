package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// KeyRequest is a ledger call (docs/serve.md, "The ledger"): the flags
// of `idemsync key ACTION` of the same names, as JSON. JSON values
// (params, result, error) are JSON here, not strings holding JSON.
type KeyRequest struct {
	NS  string `json:"ns"`
	Key string `json:"key"`
	// claim
	Params      json.RawMessage `json:"params"`
	Fingerprint string          `json:"fingerprint"`
	Owner       string          `json:"owner"`
	TTL         string          `json:"ttl"`
	OnExpired   string          `json:"on_expired"`
	Wait        string          `json:"wait"`
	// complete, fail, heartbeat
	Token  string          `json:"token"`
	Result json.RawMessage `json:"result"`
	// fail
	Retryable bool            `json:"retryable"`
	Permanent bool            `json:"permanent"`
	NotBefore string          `json:"not_before"`
	Error     json.RawMessage `json:"error"`
}

// keyFields are the fields each ledger call takes: another one is refused,
// so that a misspelt or misplaced option never passes unnoticed.
var keyFields = map[string][]string{
	"claim":     {"ns", "key", "params", "fingerprint", "owner", "ttl", "on_expired", "wait"},
	"complete":  {"ns", "key", "token", "result"},
	"fail":      {"ns", "key", "token", "retryable", "permanent", "not_before", "error"},
	"heartbeat": {"ns", "key", "token"},
}

// maxKeyWait bounds a claim's wait: a request is not a place to park.
const maxKeyWait = 5 * time.Minute

// keyCall answers POST /keys/ACTION: the body checked against the call's
// fields, then `idemsync key ACTION` with them.
func keyCall(action string) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		var req KeyRequest
		if err := decodeFields(r, action, keyFields[action], &req); err != nil {
			writeBodyError(w, err)
			return
		}
		if req.Wait != "" {
			d, err := time.ParseDuration(req.Wait)
			if err != nil || d < 0 || d > maxKeyWait {
				writeError(w, http.StatusBadRequest, exitUsage, fmt.Sprintf("wait %q: want a duration up to %s", req.Wait, maxKeyWait))
				return
			}
			// The claim may wait that long before it answers.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + writeTimeout))
			// The shutdown interrupts the wait as SIGTERM interrupts
			// `key claim --wait` (503, exit 130), instead of holding the
			// server up to its grace.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.runCtx, cancel)()
			r = r.WithContext(ctx)
		}
		if req.NotBefore != "" {
			if d, err := time.ParseDuration(req.NotBefore); err != nil || d < 0 {
				writeError(w, http.StatusBadRequest, exitUsage, fmt.Sprintf("not_before %q: want a duration such as 10m", req.NotBefore))
				return
			}
		}
		writeReply(w, s.cfg.Backend.Key(r.Context(), action, req))
	}
}

// keyGet answers GET /keys/get?ns=NS&key=KEY: `idemsync key get`.
func (s *Server) keyGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query() // ns and key only, each once: checkQuery
	writeReply(w, s.cfg.Backend.Key(r.Context(), "get", KeyRequest{NS: q.Get("ns"), Key: q.Get("key")}))
}

// decodeFields reads a call's JSON body into v, refusing a field that
// call does not take (fields).
func decodeFields(r *http.Request, call string, fields []string, v any) error {
	var got map[string]json.RawMessage
	if err := decodeBody(r, &got); err != nil {
		return err
	}
	var bad []string
	for name := range got {
		if !slices.Contains(fields, name) {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("request body: %s takes %s, not %s", call, strings.Join(fields, ", "), strings.Join(bad, ", "))
	}
	// A ledger call without ns is the default namespace; an empty one is
	// an unset variable, which would make two families' keys one unit.
	if ns, ok := got["ns"]; ok && string(ns) == `""` {
		return fmt.Errorf("request body: ns is empty: leave it out for the default namespace")
	}
	// So is an empty ttl or on_expired: on_expired "" read as retry acted
	// on an expired lease an unset expression meant to hold.
	for _, name := range []string{"ttl", "on_expired"} {
		if v, ok := got[name]; ok && string(v) == `""` {
			return fmt.Errorf("request body: %s is empty: leave it out for its default", name)
		}
	}
	b, _ := json.Marshal(got)
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}
