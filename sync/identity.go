package sync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/sync/paging"
)

// The identity of a job's walk (docs/job-file.md, "What defines a job's walk";
// docs/guarantees.md, "Job identity").
//
// A job's walk is what decides which records its pages hold and where its
// checkpoints and marks point: the request (URL, method, query, body,
// headers), where the records are, the pagination and incremental blocks,
// and the target table the progress was written to. The state file keeps
// the identity of every run when it starts, and of the job's latest run:
// a run is never continued over a different walk, and a completed job
// whose walk changed starts again from the beginning.
//
// Not part of the walk, because they never change which records a page
// holds or where a position points: timeouts, retries, rate limits,
// concurrency, max_body, error_path, auth (credentials, not the walk),
// incremental.overlap and max_future (they only decide where a new run
// starts), the columns mapping, target.create, target.version,
// target.on_bad_record, retention, state and logging.

// Identity is a job's walk, key by key ("pagination.size" → "50"). A value
// that holds a secret is kept only as a hash ("sha256:…"), never as text.
type Identity map[string]string

// secretPrefix marks a hashed value.
const secretPrefix = "sha256:"

// Identity returns the identity of the job's walk, after defaults.
func (j *Job) Identity() Identity {
	id := Identity{}
	set := func(key, v string) {
		if v == "" {
			return
		}
		if j.Secrets.Redact(v) != v {
			sum := sha256.Sum256([]byte(key + "\x00" + v))
			v = secretPrefix + hex.EncodeToString(sum[:12])
		}
		id[key] = v
	}
	s := &j.Source
	set("source.url", s.URL)
	set("source.method", s.Method)
	for k, vs := range s.Query {
		// A literal value is a filter whatever its name (partition_key):
		// only a secret under a credential's name is left out.
		v := strings.Join(vs, "\n") // one value: as it was before lists
		if !credentialName(k) || j.Secrets.Redact(v) == v {
			set("source.query."+k, v)
		}
	}
	for k, v := range s.Headers {
		if credentialName(k) {
			continue
		}
		sum := sha256.Sum256([]byte(k + "\x00" + v)) // header values are always secret
		id["source.headers."+k] = secretPrefix + hex.EncodeToString(sum[:12])
	}
	set("source.body", string(s.Body))
	set("source.records", s.Records)
	pg := &j.Pagination
	set("pagination.style", pg.Style)
	set("pagination.has_more", pg.HasMore)
	set("pagination.param", pg.Param)
	if pg.Start != nil {
		set("pagination.start", strconv.FormatInt(*pg.Start, 10))
	}
	set("pagination.size_param", pg.SizeParam)
	if pg.Size != 0 {
		set("pagination.size", strconv.Itoa(pg.Size))
	}
	set("pagination.total_pages", pg.TotalPages)
	if pg.In != "query" {
		set("pagination.in", pg.In)
	}
	set("pagination.template", pg.Template)
	set("pagination.total", pg.Total)
	set("pagination.next", pg.Next)
	set("pagination.next_header", pg.NextHeader)
	set("pagination.next_url", pg.NextURL)
	set("pagination.field", pg.Field)
	set("pagination.initial", pg.Initial)
	if pg.Continue {
		set("pagination.continue", "true")
	}
	if inc := j.Incremental; inc != nil {
		set("incremental.field", inc.Field)
		set("incremental.param", inc.Param)
		set("incremental.end_param", inc.EndParam)
		if inc.Step.Duration > 0 {
			set("incremental.step", inc.Step.String())
		}
		set("incremental.initial", inc.Initial)
		set("incremental.format", inc.Format)
	}
	if par := j.Parent; par != nil { // fanout_concurrency is not part of the walk
		set("parent", par.Name)
		set("parent.rows", par.Rows)
		set("parent.table", par.Table.String())
		set("parent.key", strings.Join(par.Table.Key, ", "))
	}
	set("target.url", j.Target.URL)
	set("target.table", j.Target.Table)
	set("target.key", strings.Join(j.Target.Key, ", "))
	return id
}

// credentialName tells whether a header or query parameter carries a
// credential rather than a part of the walk: Authorization,
// Proxy-Authorization, Cookie, and any name holding "key", "token",
// "secret", "auth", "password", "signature" or "session" (X-API-Key,
// api_key, access_token). Rotating a credential never changes which
// records a page holds, so it continues an unfinished run. A query
// parameter counts as one only when its value holds a secret.
func credentialName(name string) bool {
	n := strings.ToLower(name)
	if n == "cookie" {
		return true
	}
	for _, part := range []string{"auth", "key", "token", "secret", "password", "signature", "session"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// CredentialName reports whether a header or query parameter name names a
// credential (Authorization, X-Api-Key, Cookie, session_token ...): its
// literal value is a secret (docs/job-file.md, "What is and is not a secret").
func CredentialName(name string) bool { return credentialName(name) }

// Encode returns the stored form of the identity (JSON, keys sorted).
func (id Identity) Encode() string {
	b, _ := json.Marshal(map[string]string(id)) // maps marshal with sorted keys
	return string(b)
}

// DecodeIdentity parses a stored identity; "" (a state file written before
// identities were kept) decodes to nil.
func DecodeIdentity(s string) (Identity, error) {
	if s == "" {
		return nil, nil
	}
	var id Identity
	if err := json.Unmarshal([]byte(s), &id); err != nil {
		return nil, fmt.Errorf("decode job identity: %w", err)
	}
	return id, nil
}

// Changes lists what changed from old to id, one "key: old → new" per key
// in key order; a hashed (secret) value shows as "key: changed". It
// returns nil when old is nil (nothing stored) or equal.
func (id Identity) Changes(old Identity) []string {
	if old == nil {
		return nil
	}
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range id {
		keys[k] = true
	}
	var out []string
	for _, k := range sortedKeys(keys) {
		a, b := old[k], id[k]
		if a == b || sameHashed(k, a, b) || sameHashed(k, b, a) {
			continue
		}
		if strings.HasPrefix(a, secretPrefix) || strings.HasPrefix(b, secretPrefix) {
			out = append(out, k+": changed")
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", k, shown(a), shown(b)))
	}
	sort.Strings(out)
	return out
}

// sameHashed reports whether value a is the hash of value b: a value once
// a secret (every ${VAR} was, before docs/job-file.md "What is and is not a
// secret") and stored hashed is the same walk when its value did not
// change; so is a value stored as text that is a secret now (a target
// URL's sslpassword=), compared the other way round.
func sameHashed(key, a, b string) bool {
	if !strings.HasPrefix(a, secretPrefix) || b == "" || strings.HasPrefix(b, secretPrefix) {
		return false
	}
	sum := sha256.Sum256([]byte(key + "\x00" + b))
	return a == secretPrefix+hex.EncodeToString(sum[:12])
}

func shown(v string) string {
	if v == "" {
		return "(unset)"
	}
	return paging.Elide(v, 80)
}
