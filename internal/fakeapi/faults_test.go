package fakeapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// noKeepAlive never reuses connections, so a reset cannot be hidden by the
// transport's silent retry of idempotent requests on reused connections.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func TestFaultKinds(t *testing.T) {
	isJSONError := func(body string) bool { return strings.HasPrefix(body, `{"error":{"message":"`) }
	cases := []struct {
		kind  string
		check func(t *testing.T, resp *http.Response, body string, err error)
	}{
		{Fault429Seconds, func(t *testing.T, resp *http.Response, body string, err error) {
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !isJSONError(body) {
				t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		}},
		{Fault429Date, func(t *testing.T, resp *http.Response, body string, err error) {
			at, perr := http.ParseTime(resp.Header.Get("Retry-After"))
			if d := time.Until(at); resp.StatusCode != 429 || perr != nil || d <= 0 || d > 2*time.Second {
				t.Fatalf("%d Retry-After %q (%v ahead)", resp.StatusCode, resp.Header.Get("Retry-After"), d)
			}
		}},
		{Fault429Past, func(t *testing.T, resp *http.Response, body string, err error) {
			at, perr := http.ParseTime(resp.Header.Get("Retry-After"))
			if resp.StatusCode != 429 || perr != nil || time.Since(at) < 59*time.Minute {
				t.Fatalf("%d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}},
		{Fault429Garbage, func(t *testing.T, resp *http.Response, body string, err error) {
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "soon" {
				t.Fatalf("%d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}},
		{Fault500, statusCheck(500, isJSONError)},
		{Fault502, statusCheck(502, isJSONError)},
		{Fault503, statusCheck(503, isJSONError)},
		{Fault504, statusCheck(504, isJSONError)},
		{FaultHTML, func(t *testing.T, resp *http.Response, body string, err error) {
			if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "<html>") {
				t.Fatalf("%d %q %.40s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}},
		{FaultErrorPayload, func(t *testing.T, resp *http.Response, body string, err error) {
			if resp.StatusCode != 200 || body != `{"error":{"message":"internal"}}` {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		}},
		{FaultTruncated, func(t *testing.T, resp *http.Response, body string, err error) {
			if resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || json.Valid([]byte(body)) || len(body) < 100 {
				t.Fatalf("%d, read error %v, %d bytes", resp.StatusCode, err, len(body))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			a, srv := newServer(t, Options{Records: 30, Faults: Faults{Rate: 1, Kinds: []string{c.kind}}})
			resp, err := noKeepAlive.Get(srv.URL + "/page")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			c.check(t, resp, string(body), err)
			if n := a.FaultCounts()[c.kind]; n != 1 || len(a.FaultCounts()) != 1 {
				t.Fatalf("FaultCounts %v", a.FaultCounts())
			}
		})
	}
}

func statusCheck(status int, bodyOK func(string) bool) func(*testing.T, *http.Response, string, error) {
	return func(t *testing.T, resp *http.Response, body string, err error) {
		t.Helper()
		if resp.StatusCode != status || !bodyOK(body) || err != nil {
			t.Fatalf("%d %s %v", resp.StatusCode, body, err)
		}
	}
}

func TestFaultReset(t *testing.T) {
	a, srv := newServer(t, Options{Records: 3, Faults: Faults{Rate: 1, Kinds: []string{FaultReset}}})
	for _, client := range []*http.Client{noKeepAlive, http.DefaultClient} {
		if resp, err := client.Get(srv.URL + "/all"); err == nil {
			resp.Body.Close()
			t.Fatalf("got a response (%d) from a reset", resp.StatusCode)
		}
	}
	if a.FaultCounts()[FaultReset] < 2 {
		t.Fatalf("FaultCounts %v", a.FaultCounts())
	}
}

func TestFaultSlow(t *testing.T) {
	a, srv := newServer(t, Options{Records: 3, Faults: Faults{Rate: 1, Kinds: []string{FaultSlow}, SlowDelay: 100 * time.Millisecond}})
	impatient := &http.Client{Timeout: 20 * time.Millisecond}
	if resp, err := impatient.Get(srv.URL + "/all"); err == nil {
		resp.Body.Close()
		t.Fatal("want a client timeout")
	}
	start := time.Now()
	var data []Record
	getJSON(t, srv.URL+"/all", &data)
	if len(data) != 3 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("slow fault: %d records after %v", len(data), time.Since(start))
	}
	if a.FaultCounts()[FaultSlow] != 2 {
		t.Fatalf("FaultCounts %v", a.FaultCounts())
	}
}

// statuses returns the status of n requests to /all ("reset" for none).
func statuses(t *testing.T, srvURL string, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		resp, err := noKeepAlive.Get(srvURL + "/all")
		if err != nil {
			continue
		}
		resp.Body.Close()
		out[i] = resp.StatusCode
	}
	return out
}

func TestFaultSequence(t *testing.T) {
	f := Faults{Rate: 0.5, Kinds: []string{Fault500, Fault502, Fault503}, Seed: 42}
	a1, s1 := newServer(t, Options{Records: 3, Faults: f})
	a2, s2 := newServer(t, Options{Records: 3, Faults: f})
	seq1, seq2 := statuses(t, s1.URL, 60), statuses(t, s2.URL, 60)
	if !slices.Equal(seq1, seq2) {
		t.Fatalf("same seed, different sequences:\n%v\n%v", seq1, seq2)
	}
	f.Seed = 43
	a2.SetFaults(f)
	if slices.Equal(seq1, statuses(t, s2.URL, 60)) {
		t.Fatal("different seeds, same sequence")
	}
	ok := 0
	for _, s := range seq1 {
		if s == 200 {
			ok++
		}
	}
	if ok < 15 || ok > 45 {
		t.Fatalf("rate 0.5 served %d of 60", ok)
	}
	c := a1.FaultCounts()
	if c[Fault500]+c[Fault502]+c[Fault503] != 60-ok {
		t.Fatalf("FaultCounts %v for %d faulted requests", c, 60-ok)
	}

	a, srv := newServer(t, Options{Records: 3, Faults: Faults{Rate: 1, Kinds: []string{Fault503}, MaxConsecutive: 2}})
	if got := statuses(t, srv.URL, 7); !slices.Equal(got, []int{503, 503, 200, 503, 503, 200, 503}) {
		t.Fatalf("MaxConsecutive 2: %v", got)
	}
	a.SetFaults(Faults{Rate: 1, Kinds: []string{Fault500}, Limit: 2})
	if got := statuses(t, srv.URL, 5); !slices.Equal(got, []int{500, 500, 200, 200, 200}) {
		t.Fatalf("Limit 2: %v", got)
	}
}

func TestFaultsSkipNonListRoutes(t *testing.T) {
	a, srv := newServer(t, Options{Records: 3, Faults: Faults{Rate: 1}})
	noFollow := &http.Client{
		Transport:     noKeepAlive.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for path, want := range map[string]int{"/redirect?to=/all": http.StatusFound, "/nope": http.StatusNotFound} {
		resp, err := noFollow.Get(srv.URL + path)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	if len(a.FaultCounts()) != 0 {
		t.Fatalf("FaultCounts %v", a.FaultCounts())
	}
}

// TestFaultsNeverChangeData walks two routes through heavy chaos with a
// client that retries every failed page: the result is the data set, once.
func TestFaultsNeverChangeData(t *testing.T) {
	a, srv := newServer(t, Options{Records: 400, Faults: Faults{
		Rate: 0.6, Seed: 1, MaxConsecutive: 3, SlowDelay: 10 * time.Millisecond,
	}})
	// fetch retries until it gets a 200 whose body decodes into v and is
	// not an error payload.
	fetch := func(u string, v any) http.Header {
		for range 4 {
			resp, err := noKeepAlive.Get(u)
			if err != nil {
				continue
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || strings.HasPrefix(string(body), `{"error"`) {
				continue
			}
			if err := json.Unmarshal(body, v); err != nil {
				t.Fatalf("200 with a bad body: %v", err)
			}
			return resp.Header
		}
		t.Fatalf("%s: still failing after MaxConsecutive+1 tries", u)
		return nil
	}
	var got []int
	for next := srv.URL + "/cursor-url?limit=33"; next != ""; {
		var body struct {
			Data  []Record
			Links struct{ Next *string }
		}
		fetch(next, &body)
		got = append(got, ids(body.Data)...)
		next = ""
		if body.Links.Next != nil {
			next = *body.Links.Next
		}
	}
	checkWalk(t, got, expected(a, time.Time{}, false))
	if n := len(a.FaultCounts()); n < 10 {
		t.Fatalf("only %d fault kinds seen: %v", n, a.FaultCounts())
	}
}

func TestFaultsValidate(t *testing.T) {
	for _, f := range []Faults{{Rate: -0.1}, {Rate: 1.5}, {Kinds: []string{"418"}}, {Limit: -1}} {
		if f.Validate() == nil {
			t.Errorf("%+v accepted", f)
		}
	}
	if err := (Faults{Rate: 1, Kinds: FaultKinds()}).Validate(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("SetFaults accepted an unknown kind")
		}
	}()
	New(Options{}).SetFaults(Faults{Kinds: []string{"nope"}})
}
