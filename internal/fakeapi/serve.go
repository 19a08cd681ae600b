package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Server is an API listening on a real TCP address, for programs and tests
// that need one outside httptest.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234", without a
	// trailing slash. An unspecified listen host is reported as 127.0.0.1.
	URL string
	// API is the data set being served by Start; tests mutate and inspect
	// it. Nil for StartShop.
	API *API
	// Shop is the two-level data set served by StartShop; nil for Start.
	Shop *Shop

	srv     *http.Server
	once    sync.Once
	stopped chan struct{} // closed when a shutdown has finished
	done    chan struct{} // closed when serving has stopped
	err     error
}

// shutdownGrace is how long Start's server waits for requests in flight
// when its context is done.
const shutdownGrace = 5 * time.Second

// Start listens on addr (e.g. "127.0.0.1:0" for any free port), serves a new
// API built from opts in the background, and returns once the listener is
// open. The server shuts down gracefully (waiting up to 5s for requests in
// flight) when ctx is done or Close is called. It returns an error when opts
// is invalid or addr cannot be listened on.
func Start(ctx context.Context, addr string, opts Options) (*Server, error) {
	if err := opts.Faults.Validate(); err != nil {
		return nil, err
	}
	api := New(opts)
	s, err := start(ctx, addr, api)
	if err != nil {
		return nil, err
	}
	s.API = api
	return s, nil
}

// StartShop is Start for a Shop (see NewShop): it serves a new Shop built
// from opts on addr. It returns an error when opts.Faults is invalid or addr
// cannot be listened on.
func StartShop(ctx context.Context, addr string, opts ShopOptions) (*Server, error) {
	if err := opts.Faults.Validate(); err != nil {
		return nil, err
	}
	if opts.Shape != "" && opts.Shape != ShapeShop && opts.Shape != ShapeGitHub {
		return nil, fmt.Errorf("fakeapi: unknown shop shape %q", opts.Shape)
	}
	shop := NewShop(opts)
	s, err := start(ctx, addr, shop)
	if err != nil {
		return nil, err
	}
	s.Shop = shop
	return s, nil
}

// start listens on addr and serves h in the background until ctx is done
// or Close is called.
func start(ctx context.Context, addr string, h http.Handler) (*Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:     "http://" + reachable(ln.Addr()),
		srv:     &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			<-s.stopped // let requests in flight finish first
			return
		}
		s.err = err
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.shutdown()
		case <-s.done:
		}
	}()
	return s, nil
}

// Serve is Start for callers that only need the base URL: it serves until
// ctx is done.
func Serve(ctx context.Context, addr string, opts Options) (url string, err error) {
	s, err := Start(ctx, addr, opts)
	if err != nil {
		return "", err
	}
	return s.URL, nil
}

// Close shuts the server down gracefully and waits for it to stop. It
// returns the error that stopped serving, if any other than the shutdown.
func (s *Server) Close() error {
	s.shutdown()
	return s.Wait()
}

// Wait blocks until the server has stopped (its context is done or Close
// was called) and returns the error that stopped serving, nil after a
// normal shutdown.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// shutdown stops the server once, waiting up to shutdownGrace for requests
// in flight before closing their connections.
func (s *Server) shutdown() {
	s.once.Do(func() {
		defer close(s.stopped)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
	})
}

// reachable returns addr with an unspecified host (0.0.0.0, ::) replaced by
// 127.0.0.1, so the URL can be dialled.
func reachable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}
