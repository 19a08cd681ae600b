package jobfile

import (
	"maps"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// authDefaults fills and checks source.auth from its type's entry in
// authTable (auth_types.go) and registers every secret it holds, and the
// forms they are sent in, with the job's redactor: a key is a secret by
// its flag in the table, so a new type or key cannot forget it.
func (j loading) authDefaults(bad func(key, format string, args ...any)) {
	a := j.Source.Auth
	if a == nil {
		return
	}
	fields := authFields(a)
	// Secret values are registered whatever the type, even a key the type
	// refuses below: it is still a credential written in the file.
	for _, k := range secretAuthKeys() {
		j.Secrets.Add(fields[k].String())
	}
	if a.Type == "" {
		bad("source.auth.type", "is required (one of %s)", strings.Join(idsync.AuthTypes, ", "))
		return
	}
	t, ok := authTable[a.Type]
	if !ok {
		return // the type's rule refuses it, naming the types
	}
	c := authCheck{a: a, bad: bad}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k != "type" && isSet(fields[k]) && !t.takes(k) {
			bad("source.auth."+k, "is not used with auth type %s", a.Type)
		}
	}
	for _, k := range t.keys {
		if k.flags&need != 0 && !isSet(fields[k.name]) {
			c.need(k.name)
		}
	}
	if t.sent != nil {
		j.Secrets.Add(t.sent(a)...)
	}
	if t.fill != nil {
		t.fill(c)
	}
	// What is sent in a header as written must be sendable (a token read
	// from a file with its line break).
	header := func(key, v string, name bool) {
		if name && v != "" && !headerName(v) {
			bad("source.auth."+key, notHeaderName)
		} else if !name && !headerValue(v) {
			bad("source.auth."+key, notHeaderValue)
		}
	}
	switch {
	case a.Type == idsync.AuthBearer:
		header("token", a.Token, false)
	case a.Type == idsync.AuthAPIKey && a.In == "header":
		header("name", a.Name, true)
		header("value", a.Value, false)
	case a.Type == idsync.AuthCommand:
		header("header", a.Header, true)
		if a.Prefix != nil {
			header("prefix", *a.Prefix, false)
		}
	}
}

// authCheck fills and checks one source.auth block, reporting problems
// through bad.
type authCheck struct {
	a   *spec.Auth
	bad func(key, format string, args ...any)
}

// need reports key as required with the block's type.
func (c authCheck) need(key string) {
	c.bad("source.auth."+key, "is required with auth type %s", c.a.Type)
}
