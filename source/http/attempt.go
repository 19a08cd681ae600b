package httpsource

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tidwall/gjson"
)

// attempt is what one attempt got, as attemptTransport read it: the
// answer with its body (bounded by max_body) and what is wrong with it, or
// the error of an attempt that got no answer. The retrying client's hooks
// read it from the response (attemptOf); nothing else records an attempt.
type attempt struct {
	status      int
	header      http.Header
	body        []byte
	contentType string
	err         error // no answer: the transport's error, retryable
	retryAfter  time.Duration
	hasAfter    bool
	reason      string // what failed, for the retry log and the final error
	tooLarge    bool
	tooDeep     bool
	notJSON     bool   // a 2xx body that is no JSON at all (an HTML page)
	refused     string // why a 2xx error payload is a GraphQL request error (errorPayload)
	ambiguous   string // a key on a path the run reads is twice in one object (dupkey.go)
	scan        bodyScan
}

// attemptBody is the body of a response attemptTransport read: the bytes,
// and the attempt they came with.
type attemptBody struct {
	*bytes.Reader
	at *attempt
}

func (attemptBody) Close() error { return nil }

// attemptOf is the attempt that resp answered, nil without a response.
func attemptOf(resp *http.Response) *attempt {
	if resp == nil {
		return nil
	}
	if b, ok := resp.Body.(attemptBody); ok {
		return b.at
	}
	// A redirect the client could not follow: its body is not read.
	return &attempt{status: resp.StatusCode, header: resp.Header, contentType: resp.Header.Get("Content-Type")}
}

// attemptTransport is the bottom of the retrying client: it sends one
// attempt (through the shared pause, rate limit and per-attempt timeout),
// reads its body within that timeout and classifies it, so that
// go-retryablehttp's hooks decide from the response alone. go-retryablehttp
// hands its Backoff hook only the response, so an attempt that got none
// (a network error, a timeout) is answered here with a response of status
// 0 that carries the error: every retry is then announced, before its
// wait, with its request and reason (docs/operations.md, "Logs"). Errors
// that no retry can cure (TLS verification, a bad scheme, a refused
// credential) and the end of the fetch's context stay errors.
type attemptTransport struct {
	next http.RoundTripper
	f    *Fetcher
}

func (t *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil || permanentTransportError(err) {
			return nil, err
		}
		at := &attempt{err: err, reason: t.f.redact(shortErr(err))}
		return &http.Response{Request: req, Header: http.Header{}, Body: attemptBody{bytes.NewReader(nil), at}}, nil
	}
	if resp.Header.Get("Location") != "" && isRedirect(resp.StatusCode) {
		return resp, nil // the client follows it (checkRedirect) or fails
	}
	at := t.f.read(resp)
	if ctx.Err() != nil { // the run ended while the body arrived
		return nil, ctx.Err()
	}
	resp.Request = req
	resp.Body = attemptBody{bytes.NewReader(at.body), at}
	return resp, nil
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// read reads resp's body (at most max_body) and classifies the answer:
// truncated or invalid JSON and an error payload in a 2xx are failures
// to retry (reason); a body too large or too deep, or no JSON at all,
// fail at once.
func (f *Fetcher) read(resp *http.Response) *attempt {
	at := &attempt{status: resp.StatusCode, header: resp.Header, contentType: resp.Header.Get("Content-Type")}
	if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		at.retryAfter, at.hasAfter = d, true
	}
	limit := int64(f.cfg.Source.MaxBody)
	data, rerr := readBody(resp.Body, resp.ContentLength, limit)
	resp.Body.Close() // releases the attempt's timeout
	if int64(len(data)) > limit {
		at.tooLarge = true
		return at
	}
	at.body = data
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		at.reason = fmt.Sprintf("HTTP %d", resp.StatusCode)
		return at
	}
	f.checkBody(at, data, rerr)
	return at
}

// checkBody classifies the body of a 2xx answer (data, read with error
// rerr): cut short, invalid JSON and an error payload are retried; a body
// nested too deep, no JSON at all or holding a key the run reads twice in
// one object fail at once.
func (f *Fetcher) checkBody(at *attempt, data []byte, rerr error) {
	switch {
	case rerr != nil:
		at.reason = "body cut short: " + f.redact(shortErr(rerr))
	case at.status == http.StatusNoContent:
		// no body: an empty page
	case f.scanBody(at, data):
		// gjson validates and queries recursively: a body nested millions
		// of levels deep would overflow the stack and kill the process,
		// so such a body is refused before gjson sees it.
		at.tooDeep = true
	case !gjson.ValidBytes(data):
		if notJSON(data, at.contentType) {
			at.notJSON = true
			return
		}
		at.reason = "invalid JSON body" + describeContentType(at.contentType, data)
	default:
		if at.ambiguous = f.keys.duplicateKey(data, at.scan); at.ambiguous != "" {
			return
		}
		f.errorPayload(at, data)
	}
}

// scanBody scans data once (scan.go): it reports whether data nests too
// deep, and keeps where the records and the top-level keys the run reads
// are in at.scan.
func (f *Fetcher) scanBody(at *attempt, data []byte) bool {
	comps, _ := recordsComps(f.cfg.Source.Records)
	at.scan = scanBodyKeys(data, comps, MaxJSONDepth, f.keys)
	return at.scan.tooDeep
}

// errUnusable stops the retries of an answer that is no page and that
// sending again cannot cure; the client's ErrorHandler (giveUp) says why.
var errUnusable = errors.New("answer not usable")
