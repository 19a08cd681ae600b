package sync

import (
	"context"
	"io"
	"net/http"
	"time"
)

// timedRoundTrip sends req through base with the per-attempt timeout
// applied from now on: the rate limiter's and a 429 pause's waits come
// before, so they never consume it. The timeout covers the body read; it
// is released when the body is closed.
func timedRoundTrip(base http.RoundTripper, req *http.Request, timeout time.Duration) (*http.Response, error) {
	if timeout <= 0 {
		return base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	resp, err := base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases an attempt's timeout when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
