package jobfile

import (
	"encoding/base64"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
	"github.com/idemsync/idemsync/sync/paging"
)

// authType is what the loader knows of one source.auth type: the keys it
// takes (any other key set is refused), which of them are required and
// which hold secrets, the forms other than the keys' own values its
// credentials are sent in, and its defaults and checks that involve more
// than the presence of a key. The type's http.RoundTripper is built from
// its entry in source/auth's table of the same types (docs/architecture.md,
// "What a new auth type touches").
type authType struct {
	keys []authKey
	sent func(a *spec.Auth) []string // derived forms on the wire, registered as secrets
	fill func(c authCheck)
}

// authKey is one key of source.auth as a type takes it.
type authKey struct {
	name  string // as in the job file
	flags keyFlag
}

type keyFlag uint8

const (
	need   keyFlag = 1 << iota // required with the type
	secret                     // its value is a credential: registered with the redactor
)

// oauth2Keys are the keys of both OAuth2 grants.
var oauth2Keys = []authKey{{"token_url", need}, {"client_id", need}, {"client_secret", secret}, {"scopes", 0}, {"auth_style", 0}}

// authTable holds every source.auth type (docs/job-file.md, Auth); the
// type's rule takes its enum from idsync.AuthTypes, which
// TestAuthTableComplete holds equal to this table's types.
var authTable = map[string]authType{
	idsync.AuthBearer: {keys: []authKey{{"token", need | secret}}},
	idsync.AuthBasic: {keys: []authKey{{"username", need}, {"password", secret}},
		sent: func(a *spec.Auth) []string {
			return []string{base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password))}
		}},
	idsync.AuthAPIKey: {keys: []authKey{{"name", need}, {"value", need | secret}, {"in", 0}},
		fill: func(c authCheck) {
			if c.a.In == "" {
				c.a.In = "header"
			}
		}},
	idsync.AuthClientCredentials: {keys: oauth2Keys, sent: oauth2Basic, fill: checkTokenURL},
	idsync.AuthRefreshToken:      {keys: append(slices.Clip(oauth2Keys), authKey{"refresh_token", need | secret}), sent: oauth2Basic, fill: checkTokenURL},
	idsync.AuthCommand:           {keys: []authKey{{"run", 0}, {"header", 0}, {"prefix", 0}, {"ttl", 0}}, fill: commandDefaults},
}

// takes reports whether the type uses key.
func (t authType) takes(key string) bool {
	return slices.ContainsFunc(t.keys, func(k authKey) bool { return k.name == key })
}

// secretAuthKeys lists the keys that hold a secret with any type.
func secretAuthKeys() []string {
	var out []string
	for _, typ := range slices.Sorted(maps.Keys(authTable)) {
		for _, k := range authTable[typ].keys {
			if k.flags&secret != 0 && !slices.Contains(out, k.name) {
				out = append(out, k.name)
			}
		}
	}
	return out
}

// oauth2Basic is the HTTP Basic form in which x/oauth2 sends the client's
// credentials to token_url (auth_style: header): each URL-escaped first
// (RFC 6749 §2.3.1).
func oauth2Basic(a *spec.Auth) []string {
	return []string{base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(a.ClientID) + ":" + url.QueryEscape(a.ClientSecret)))}
}

// checkTokenURL checks an OAuth2 token_url (its presence is the table's).
func checkTokenURL(c authCheck) {
	if c.a.TokenURL != "" {
		if err := paging.ValidURL(c.a.TokenURL); err != nil {
			c.bad("source.auth.token_url", "%v", err)
		}
	}
}

// commandDefaults checks a command block; header defaults to
// Authorization, prefix to "Bearer " and ttl to DefaultAuthCommandTTL.
func commandDefaults(c authCheck) {
	a := c.a
	if len(a.Run) == 0 || strings.TrimSpace(a.Run[0]) == "" {
		c.bad("source.auth.run", "is required with auth type command (the program and its arguments)")
	}
	if a.Header == "" {
		a.Header = "Authorization"
	}
	if a.Prefix == nil {
		p := "Bearer "
		a.Prefix = &p
	}
	if a.TTL.Duration == 0 {
		a.TTL.Duration = idsync.DefaultAuthCommandTTL
	}
}

// authFields maps each key of source.auth (its YAML name) to its field in a.
func authFields(a *spec.Auth) map[string]reflect.Value {
	v := reflect.ValueOf(a).Elem()
	out := map[string]reflect.Value{}
	for _, f := range reflect.VisibleFields(v.Type()) {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		out[name] = v.FieldByIndex(f.Index)
	}
	return out
}

// isSet reports whether a key was given: a list with elements, any other
// value not its zero (a prefix set to "" is set).
func isSet(v reflect.Value) bool {
	if v.Kind() == reflect.Slice {
		return v.Len() > 0
	}
	return !v.IsZero()
}
