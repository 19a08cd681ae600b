package jobfile

import (
	idsync "github.com/idemsync/idemsync/sync"

	"encoding/base64"
	"strings"
)

// authDefaults fills and checks source.auth and registers every secret it
// holds (and the forms it is sent in) with the job's redactor.
func (j loading) authDefaults(bad func(key, format string, args ...any)) {
	a := j.Source.Auth
	if a == nil {
		return
	}
	c := authCheck{a: a, bad: bad}
	j.Secrets.Add(a.Token, a.Password, a.Value, a.ClientSecret, a.RefreshToken)
	oauth := map[string]bool{"token_url": a.TokenURL != "", "client_id": a.ClientID != "", "client_secret": a.ClientSecret != "",
		"scopes": len(a.Scopes) > 0, "auth_style": a.AuthStyle != "", "refresh_token": a.RefreshToken != ""}
	cmd := map[string]bool{"run": len(a.Run) > 0, "header": a.Header != "", "prefix": a.Prefix != nil, "ttl": a.TTL.Duration != 0}
	switch a.Type {
	case idsync.AuthBearer:
		c.need("token", a.Token)
		c.unused(oauth)
		c.unused(cmd)
	case idsync.AuthBasic:
		c.need("username", a.Username)
		j.Secrets.Add(base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password)))
		c.unused(oauth)
		c.unused(cmd)
	case idsync.AuthAPIKey:
		c.apiKey()
		c.unused(oauth)
		c.unused(cmd)
	case idsync.AuthClientCredentials, idsync.AuthRefreshToken:
		c.oauth2()
		c.unused(cmd)
	case idsync.AuthCommand:
		c.command()
		c.unused(oauth)
	case "":
		bad("source.auth.type", "is required (one of %s)", strings.Join(idsync.AuthTypes, ", "))
	}
	if a.Type != idsync.AuthAPIKey && a.In != "" {
		bad("source.auth.in", "is not used with auth type %s", a.Type)
	}
}

// authCheck fills and checks one source.auth block, reporting problems
// through bad.
type authCheck struct {
	a   *idsync.Auth
	bad func(key, format string, args ...any)
}

// need reports key as required when its value v is empty.
func (c authCheck) need(key, v string) {
	if v == "" {
		c.bad("source.auth."+key, "is required with auth type %s", c.a.Type)
	}
}

// unused reports every key of keys that is set as not used by the type.
func (c authCheck) unused(keys map[string]bool) {
	for k, set := range keys {
		if set {
			c.bad("source.auth."+k, "is not used with auth type %s", c.a.Type)
		}
	}
}

// apiKey checks an api_key block; in defaults to header.
func (c authCheck) apiKey() {
	a := c.a
	c.need("name", a.Name)
	c.need("value", a.Value)
	if a.In == "" {
		a.In = "header"
	}
}

// oauth2 checks an oauth2_client_credentials or oauth2_refresh_token block.
func (c authCheck) oauth2() {
	a := c.a
	c.need("token_url", a.TokenURL)
	if a.TokenURL != "" {
		if err := idsync.ValidURL(a.TokenURL); err != nil {
			c.bad("source.auth.token_url", "%v", err)
		}
	}
	c.need("client_id", a.ClientID)
	if a.Type == idsync.AuthRefreshToken {
		c.need("refresh_token", a.RefreshToken)
	} else if a.RefreshToken != "" {
		c.bad("source.auth.refresh_token", "is not used with auth type %s", a.Type)
	}
}

// command checks a command block; header defaults to Authorization,
// prefix to "Bearer " and ttl to DefaultAuthCommandTTL.
func (c authCheck) command() {
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
