package fakeapi

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// maintenancePage is the body of FaultHTML.
const maintenancePage = `<!DOCTYPE html>
<html><head><title>503 Service Unavailable</title></head>
<body><h1>Down for maintenance</h1><p>We will be back shortly.</p></body></html>
`

// inject writes fault kind instead of the response render would build, and
// counts it. It returns false when the normal response should still follow
// (FaultSlow after its delay).
func (a *API) inject(w http.ResponseWriter, r *http.Request, kind string, slow time.Duration, render func() *response) bool {
	a.obs.fault(kind)
	return writeFault(w, r, kind, slow, render)
}

// writeFault writes fault kind instead of the response render would build.
// It returns false when the normal response should still follow (FaultSlow
// after its delay).
func writeFault(w http.ResponseWriter, r *http.Request, kind string, slow time.Duration, render func() *response) bool {
	switch kind {
	case Fault429Seconds:
		rateLimited("1").write(w)
	case Fault429Date:
		// Whole seconds only, so the date is between 1 and 2 seconds ahead.
		at := time.Now().Add(time.Second).Truncate(time.Second).Add(time.Second)
		rateLimited(at.UTC().Format(http.TimeFormat)).write(w)
	case Fault429Past:
		rateLimited(time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)).write(w)
	case Fault429Garbage:
		rateLimited("soon").write(w)
	case Fault500, Fault502, Fault503, Fault504:
		status, _ := strconv.Atoi(kind)
		errorResponse(status, http.StatusText(status)).write(w)
	case FaultReset:
		resetConn(w)
	case FaultTruncated:
		truncate(w, render())
	case FaultErrorPayload:
		errorResponse(http.StatusOK, "internal").write(w)
	case FaultSlow:
		return !sleep(r.Context(), slow)
	case FaultHTML:
		h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
		(&response{status: http.StatusServiceUnavailable, header: h, body: []byte(maintenancePage)}).write(w)
	}
	return true
}

func rateLimited(retryAfter string) *response {
	resp := errorResponse(http.StatusTooManyRequests, "rate limited")
	resp.header.Set("Retry-After", retryAfter)
	return resp
}

// resetConn drops the connection without a response: an RST on TCP.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the stream instead.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// truncate sends resp's status and headers with its full Content-Length but
// only the first half of its body, then closes the connection.
func truncate(w http.ResponseWriter, resp *response) {
	half := resp.body[:len(resp.body)/2]
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		h := w.Header()
		for k, v := range resp.header {
			h[k] = v
		}
		h.Set("Content-Length", strconv.Itoa(len(resp.body)))
		w.WriteHeader(resp.status)
		_, _ = w.Write(half)
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", resp.status, http.StatusText(resp.status))
	for k, vs := range resp.header {
		for _, v := range vs {
			fmt.Fprintf(buf, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(buf, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(resp.body))
	_, _ = buf.Write(half)
	_ = buf.Flush()
}
