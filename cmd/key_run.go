package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/jsontext"
	"github.com/idemsync/idemsync/ledger"
)

// runKey runs a `key` subcommand: one JSON object on stdout (one line per
// key with --batch), exit 0 or, with --exit-codes, the status's code. A
// failure prints an object with status error too, and exits with its
// class's code: a store that cannot be reached fails closed.
func runKey(ctx context.Context, o *keyOptions) error {
	res, err := keyResult(ctx, o)
	if err != nil {
		return keyFailed(o, err)
	}
	if res == nil { // --batch printed its lines
		return nil
	}
	writeJSON(o.io, res)
	if st, ok := res.(ledger.Result); ok && o.exitCodes {
		if code := keyExitCode(o.action, st.Status); code != exitOK {
			return &reportedError{code: code}
		}
	}
	return nil
}

// keyFailed prints a failed call: its object (status error, the message,
// the exit code) on stdout, the message and hint on stderr.
func keyFailed(o *keyOptions, err error) error {
	code := exitCode(err)
	writeJSON(o.io, map[string]any{"status": "error", "error": err.Error(), "exit_code": code})
	fmt.Fprintf(o.io.ErrOut, "error: %v\n", err)
	if h := contract.Hint(err); h != "" {
		fmt.Fprintf(o.io.ErrOut, "hint: %s\n", h)
	}
	return &reportedError{code: code}
}

// keyResult runs the subcommand and returns what it prints.
func keyResult(ctx context.Context, o *keyOptions) (any, error) {
	if o.action == "derive" {
		return derive(o)
	}
	if err := checkKeyUsage(o); err != nil {
		return nil, err
	}
	l, closer, err := openLedger(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	switch o.action {
	case "claim":
		if o.batch {
			return nil, claimBatch(ctx, l, o)
		}
		r, err := ledger.Claim{NS: o.ns, Key: o.key, Params: json.RawMessage(o.params), Fingerprint: o.fingerprint,
			Owner: o.owner, TTL: o.ttl, OnExpired: o.onExpired}.Request()
		if err != nil {
			return nil, err
		}
		return ledger.ClaimWait(ctx, l, r, o.wait, o.poll)
	case "complete":
		return ledger.Complete(ctx, l, o.ns, o.key, o.token, []byte(o.result))
	case "fail":
		return ledger.Fail(ctx, l, o.ns, o.key, o.token, contract.LedgerFailure{Retryable: o.retryable, NotBefore: o.notBefore, Error: o.errJSON})
	case "heartbeat":
		return ledger.Heartbeat(ctx, l, o.ns, o.key, o.token)
	case "get":
		return ledger.Get(ctx, l, o.ns, o.key)
	case "resolve":
		return ledger.Resolve(ctx, l, o.ns, o.key, contract.LedgerResolution{As: o.as, Result: o.result, Error: o.errJSON})
	case "list":
		older, _ := parseKeep(o.olderThan) // checked by checkKeyUsage
		keys, err := ledger.List(ctx, l, contract.LedgerFilter{NS: o.ns, Statuses: o.statuses, Older: older, Limit: o.limit})
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": contract.StatusOK, "count": len(keys), "keys": keys}, nil
	case "gc":
		keep, _ := parseKeep(o.keep)
		n, err := ledger.GC(ctx, l, keep)
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": contract.StatusOK, "deleted": n, "keep": keep.String()}, nil
	}
	return nil, fmt.Errorf("unknown key action %q", o.action)
}

// checkKeyUsage refuses flags that cannot go together, before the store
// is opened.
func checkKeyUsage(o *keyOptions) error {
	bad := func(format string, args ...any) error {
		return &usageError{err: fmt.Errorf("key %s: "+format, append([]any{o.action}, args...)...)}
	}
	// The flag's default is the default namespace: an empty one is an
	// unset variable, and read as the default it would make two families'
	// keys one unit (docs/ledger.md, "Choosing a key").
	if o.ns == "" && o.action != "list" && o.action != "gc" {
		return bad("--ns is empty: leave it out for the namespace %q", ledger.DefaultNS)
	}
	switch o.action {
	case "claim":
		// Given empty (an unset variable), as --ns: read as the defaults,
		// --on-expired "$POLICY" meant to hold acted on an expired lease.
		if o.onExpired == "" {
			return bad("--on-expired is empty: leave it out for %s, or give %s", contract.OnExpiredRetry, contract.OnExpiredHold)
		}
		if o.ttl == "" {
			return bad("--ttl is empty: leave it out for %s", ledger.DefaultTTL)
		}
		if o.batch && o.wait > 0 {
			return bad("--wait does not go with --batch")
		}
		if o.poll <= 0 {
			return bad("--poll must be positive")
		}
		if o.wait < 0 {
			return bad("--wait %s is negative", o.wait)
		}
	case "complete", "fail", "heartbeat":
		if o.token == "" {
			return bad("--token is required (the token the claim returned)")
		}
		if o.action == "fail" && o.retryable == o.permanent {
			return bad("give one of --retryable and --permanent")
		}
		if o.action == "fail" && o.notBefore != 0 && !o.retryable {
			return bad("--not-before goes with --retryable")
		}
		if o.notBefore < 0 {
			return bad("--not-before %s is negative", o.notBefore)
		}
	case "list":
		if o.olderThan != "" {
			if _, err := parseKeep(o.olderThan); err != nil {
				return bad("--older-than %q: want a duration such as 1h or 7d", o.olderThan)
			}
		}
		for _, s := range o.statuses {
			switch s {
			case contract.LedgerPending, contract.LedgerCompleted, contract.LedgerFailed, contract.LedgerRetry, contract.LedgerHeld:
			default:
				return bad("--status %q: want pending, completed, failed, retry or held", s)
			}
		}
	case "gc":
		keep, err := parseKeep(o.keep)
		if err != nil {
			return bad("--keep %q: want a duration such as 30d or 72h", o.keep)
		}
		// 0 reads as "no limit" in many tools; here it would delete every
		// completed key, and each unit's next delivery would act again.
		if keep == 0 {
			return bad("--keep %s would delete every completed and failed key now (a replay of any would act again): give the retention, such as 30d", o.keep)
		}
	}
	return nil
}

// claimBatch claims one key per JSON line of stdin, the flags giving what
// a line leaves out, and prints one result line per input line, in order.
// A line that is not a valid claim gets status invalid and the others go
// on; lines are claimed in chunks, a few transactions for many keys.
func claimBatch(ctx context.Context, l contract.Ledger, o *keyOptions) error {
	const chunk = 500
	in := bufio.NewScanner(o.io.In)
	in.Buffer(make([]byte, 64*1024), 16<<20)
	var lines []ledger.Result // an invalid line's result, or a placeholder
	var reqs []contract.ClaimRequest
	var at []int // index in lines of each request
	flush := func() error {
		if len(reqs) > 0 {
			res, err := ledger.ClaimAll(ctx, l, reqs)
			if err != nil {
				return err
			}
			for i, r := range res {
				lines[at[i]] = r
			}
		}
		for _, r := range lines {
			writeJSON(o.io, r)
		}
		lines, reqs, at = lines[:0], reqs[:0], at[:0]
		return nil
	}
	// A key again in the same call is another delivery of its unit (a
	// batch holding an event and its redelivery), never its claimer
	// retrying: it claims without the owner, so that it is in_progress
	// rather than the first line's claim back (docs/ledger.md).
	claimed := map[[2]string]bool{}
	n := 0
	for in.Scan() {
		n++
		text := strings.TrimSpace(in.Text())
		if text == "" {
			continue
		}
		c := ledger.Claim{NS: o.ns, Owner: o.owner, TTL: o.ttl, OnExpired: o.onExpired}
		r, err := parseBatchLine(text, c)
		if err != nil {
			lines = append(lines, ledger.Result{Status: "invalid", NS: c.NS, Key: r.Key, Line: n, Message: err.Error()})
			continue
		}
		if claimed[[2]string{r.NS, r.Key}] {
			r.Owner = ""
		}
		claimed[[2]string{r.NS, r.Key}] = true
		at = append(at, len(lines))
		lines = append(lines, ledger.Result{})
		reqs = append(reqs, r)
		if len(reqs) == chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := in.Err(); err != nil && err != io.EOF {
		return &contract.Error{Class: contract.Invalid, Msg: "read stdin", Err: err}
	}
	return flush()
}

// parseBatchLine reads one line of claim --batch over the defaults c.
func parseBatchLine(text string, c ledger.Claim) (contract.ClaimRequest, error) {
	// Before decoding, which would read two different keys as one.
	if err := jsontext.Check([]byte(text)); err != nil {
		return contract.ClaimRequest{}, fmt.Errorf("line: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return contract.ClaimRequest{}, fmt.Errorf("not a claim object: %v", err)
	}
	if dec.More() {
		return contract.ClaimRequest{}, fmt.Errorf("more than one claim object: one a line")
	}
	if c.NS == "" {
		return contract.ClaimRequest{}, fmt.Errorf("ns is empty: leave it out for the namespace %q", ledger.DefaultNS)
	}
	// The flags gave both; empty here is the line's, which would override
	// --on-expired hold with retry and --ttl with 10m.
	if c.OnExpired == "" {
		return contract.ClaimRequest{}, fmt.Errorf("on_expired is empty: leave it out for --on-expired")
	}
	if c.TTL == "" {
		return contract.ClaimRequest{}, fmt.Errorf("ttl is empty: leave it out for --ttl")
	}
	return c.Request()
}

// derive prints a stable key for an event.
func derive(o *keyOptions) (any, error) {
	from := []byte(o.from)
	if o.from == "-" {
		b, err := io.ReadAll(o.io.In)
		if err != nil {
			return nil, err
		}
		from = b
	}
	if len(strings.TrimSpace(string(from))) == 0 {
		return nil, &usageError{err: fmt.Errorf("key derive: --from is required (a JSON object, or - for stdin)")}
	}
	if err := contract.CheckKey("namespace", o.ns); err != nil {
		return nil, err
	}
	key, canonical, err := ledger.Derive(from, o.fields)
	if err != nil {
		return nil, &contract.Error{Class: contract.Invalid, Msg: "key derive: " + err.Error()}
	}
	return map[string]any{"status": contract.StatusOK, "ns": o.ns, "key": key, "canonical": canonical,
		"downstream_key": ledger.DownstreamKey(o.ns, key)}, nil
}
