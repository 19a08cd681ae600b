package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/internal/jsontext"
)

// route is one endpoint: the table the mux is built from and that the
// OpenAPI description (openapi.json) is checked against.
type route struct {
	method, path string
	public       bool // served without the token (the health check)
	handler      func(*Server, http.ResponseWriter, *http.Request)
	// query are the query parameters the endpoint takes, each once:
	// another one, or one given twice, is refused (checkQuery).
	query []string
}

// routeTable lists every endpoint (docs/serve.md, "Endpoints").
var routeTable = []route{
	{"GET", "/healthz", true, (*Server).healthz, nil},
	{"GET", "/openapi.json", false, (*Server).openapi, nil},
	{"GET", "/metrics", false, (*Server).metrics, nil},
	{"GET", "/jobs", false, (*Server).listJobs, nil},
	{"POST", "/jobs/{name}/run", false, (*Server).run, nil},
	{"GET", "/jobs/{name}/status", false, (*Server).status, []string{"runs"}},
	{"POST", "/jobs/{name}/changes", false, changesCall("next"), nil},
	{"POST", "/jobs/{name}/changes/ack", false, changesCall("ack"), nil},
	{"GET", "/jobs/{name}/changes/status", false, (*Server).changesStatus, nil},
	{"POST", "/keys/claim", false, keyCall("claim"), nil},
	{"POST", "/keys/complete", false, keyCall("complete"), nil},
	{"POST", "/keys/fail", false, keyCall("fail"), nil},
	{"POST", "/keys/heartbeat", false, keyCall("heartbeat"), nil},
	{"GET", "/keys/get", false, (*Server).keyGet, []string{"ns", "key"}},
}

// routes builds the mux: each route behind the token unless public, a
// JSON 405 for another method on a known path, a JSON 404 elsewhere.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	paths := map[string][]string{}
	for _, rt := range routeTable {
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
			if err := checkQuery(r, rt.query); err != nil && !rt.public {
				writeError(w, http.StatusBadRequest, exitUsage, err.Error())
				return
			}
			rt.handler(s, w, r)
		})
		if !rt.public {
			h = s.token.guard(h)
		}
		mux.Handle(rt.method+" "+rt.path, h)
		paths[rt.path] = append(paths[rt.path], rt.method)
	}
	for p, methods := range paths {
		allow := fmt.Sprint(methods)
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow[1:len(allow)-1])
			writeError(w, http.StatusMethodNotAllowed, exitUsage, r.Method+" "+p+": method not allowed")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, exitUsage, "no such endpoint: "+r.URL.Path+" (see /openapi.json)")
	})
	return mux
}

// checkQuery refuses a query parameter the endpoint does not take (a
// run's flags go in its body: ?full=true would run without --full) and
// one given twice (?key=a&key=b would read a): what a request asks is
// done or refused, never dropped (docs/serve.md, "Endpoints"). The
// health check is left alone: a probe's URL is no request to act on.
func checkQuery(r *http.Request, takes []string) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("query string: %v", err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case !slices.Contains(takes, name) && len(takes) == 0:
			return fmt.Errorf("query parameter %q: %s %s takes none (its options go in the JSON body)", name, r.Method, r.URL.Path)
		case !slices.Contains(takes, name):
			return fmt.Errorf("query parameter %q: %s %s takes %s", name, r.Method, r.URL.Path, strings.Join(takes, ", "))
		case len(q[name]) > 1:
			return fmt.Errorf("query parameter %q given %d times: give it once", name, len(q[name]))
		}
	}
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	writeBody(w, http.StatusOK, openapiJSON)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	b, err := s.cfg.Backend.Metrics(r.Context(), s.jobs.files(), s.runs.files())
	if err != nil {
		writeError(w, http.StatusInternalServerError, exitPermanent, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b)
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	names, err := s.jobs.list()
	if err != nil {
		writeError(w, http.StatusInternalServerError, exitPermanent, "reading the jobs folder: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": names})
}

// job resolves the request's job name, answering the error itself when
// it names no job of the folder.
func (s *Server) job(w http.ResponseWriter, r *http.Request) (string, bool) {
	file, err := s.jobs.resolve(r.PathValue("name"))
	switch {
	case errors.Is(err, errOutside):
		writeError(w, http.StatusForbidden, exitUsage, err.Error())
	case errors.Is(err, errNoJob):
		writeError(w, http.StatusNotFound, exitUsage, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, exitPermanent, err.Error())
	}
	return file, err == nil
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	file, ok := s.job(w, r)
	if !ok {
		return
	}
	runs := 0
	if v := r.URL.Query().Get("runs"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			writeError(w, http.StatusBadRequest, exitUsage, "runs: want a number from 0 to 1000")
			return
		}
		runs = n
	}
	writeReply(w, s.cfg.Backend.Status(r.Context(), file, runs))
}

// run runs the job, or answers the status of its run in progress (409,
// the CLI's "locked"): never a second run. The run itself is the
// server's, not the request's: a client that hangs up leaves it running
// to its end, and a later request sees it in status.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	file, ok := s.job(w, r)
	if !ok {
		return
	}
	var o RunOptions
	if err := decodeBody(r, &o); err != nil {
		writeBodyError(w, err)
		return
	}
	if o.MaxPages < 0 {
		writeError(w, http.StatusBadRequest, exitUsage, "max_pages must not be negative")
		return
	}
	if o.TimeLimit != "" {
		if d, err := time.ParseDuration(o.TimeLimit); err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, exitUsage, fmt.Sprintf("time_limit %q: want a duration such as 14m", o.TimeLimit))
			return
		}
	}
	f, started := s.runs.start(file)
	if !started {
		s.inProgress(w, r, file, f)
		return
	}
	if !s.begin() {
		s.runs.finish(file, f, Reply{})
		writeError(w, http.StatusServiceUnavailable, exitInterrupted, "the server is shutting down: no run starts")
		return
	}
	go func() {
		defer s.wg.Done()
		s.runs.finish(file, f, s.cfg.Backend.Run(s.runCtx, file, o, f.markStarted))
	}()
	// A run takes as long as it takes: no write deadline for its answer.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	select {
	case <-f.done:
		writeReply(w, f.reply)
	case <-r.Context().Done():
		s.cfg.Log.Info("client left; the run goes on", "job", r.PathValue("name"))
	}
}

// inProgress answers a run request while the job's run f is going: 409
// with the CLI's word for it (locked, exit 4) and the job's status, read
// once f is recorded in it (or ended, or startWait passed), so that its
// last run is f and not the one before.
func (s *Server) inProgress(w http.ResponseWriter, r *http.Request, file string, f *flight) {
	wait := time.NewTimer(startWait)
	defer wait.Stop()
	select {
	case <-f.started:
	case <-wait.C:
	case <-r.Context().Done():
		return
	}
	st := s.cfg.Backend.Status(r.Context(), file, 0)
	body := struct {
		errorBody
		JobStatus json.RawMessage `json:"job_status,omitempty"`
	}{errorBody{Job: r.PathValue("name"), Status: "locked", ExitCode: exitLocked,
		Error: "a run of this job is in progress in this server: no second run was started; its status is job_status"}, nil}
	if st.Code == exitOK {
		body.JobStatus = bytes.TrimSpace(st.Body)
	}
	writeJSON(w, statusOf(exitLocked), body)
}

// writeBodyError answers a body that could not be read or decoded: 413
// over the limit, else 400.
func writeBodyError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		status = http.StatusRequestEntityTooLarge
	}
	writeError(w, status, exitUsage, err.Error())
}

// decodeBody reads the request's JSON body into v; an empty body leaves v
// as it is, an unknown field is an error.
func decodeBody(r *http.Request, v any) error {
	b, err := readAll(r)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return err
	}
	// Before decoding, which reads such strings as U+FFFD: two keys or
	// consumers as one.
	if err := jsontext.Check(b); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	// Before decoding, which keeps the last of a name given twice:
	// {"key":"a","key":"b"} is no claim of b.
	if err := jsontext.Duplicates(b); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	if dec.More() {
		return errors.New("request body: one JSON object only")
	}
	return nil
}

// readAll reads the body, which MaxBytesReader limits.
func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fmt.Errorf("request body over %d bytes: %w", tooBig.Limit, err)
		}
		return nil, fmt.Errorf("request body: %w", err)
	}
	return b.Bytes(), nil
}
