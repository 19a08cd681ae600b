package sync

import (
	"encoding/base64"
	"strings"
	"time"
)

// Auth types of source.auth.type (SPEC §9).
const (
	AuthBearer            = "bearer"
	AuthBasic             = "basic"
	AuthAPIKey            = "api_key"
	AuthClientCredentials = "oauth2_client_credentials"
	AuthRefreshToken      = "oauth2_refresh_token"
	AuthCommand           = "command"
)

// DefaultAuthCommandTTL is how long a command's token is reused.
const DefaultAuthCommandTTL = 5 * time.Minute

// AuthTypes lists the source.auth types.
var AuthTypes = []string{AuthBearer, AuthBasic, AuthAPIKey, AuthClientCredentials, AuthRefreshToken, AuthCommand}

// authDefaults fills and checks source.auth and registers every secret it
// holds (and the forms it is sent in) with the job's redactor.
func (j *Job) authDefaults(bad func(key, format string, args ...any)) {
	a := j.Source.Auth
	if a == nil {
		return
	}
	need := func(key, v string) {
		if v == "" {
			bad("source.auth."+key, "is required with auth type %s", a.Type)
		}
	}
	unused := func(keys map[string]bool) {
		for k, set := range keys {
			if set {
				bad("source.auth."+k, "is not used with auth type %s", a.Type)
			}
		}
	}
	j.Secrets.Add(a.Token, a.Password, a.Value, a.ClientSecret, a.RefreshToken)
	oauth := map[string]bool{"token_url": a.TokenURL != "", "client_id": a.ClientID != "", "client_secret": a.ClientSecret != "",
		"scopes": len(a.Scopes) > 0, "auth_style": a.AuthStyle != "", "refresh_token": a.RefreshToken != ""}
	cmd := map[string]bool{"run": len(a.Run) > 0, "header": a.Header != "", "prefix": a.Prefix != nil, "ttl": a.TTL.Duration != 0}
	switch a.Type {
	case AuthBearer:
		need("token", a.Token)
		unused(oauth)
		unused(cmd)
	case AuthBasic:
		need("username", a.Username)
		j.Secrets.Add(base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password)))
		unused(oauth)
		unused(cmd)
	case AuthAPIKey:
		need("name", a.Name)
		need("value", a.Value)
		switch a.In {
		case "":
			a.In = "header"
		case "header", "query":
		default:
			bad("source.auth.in", "%q must be header or query", a.In)
		}
		unused(oauth)
		unused(cmd)
	case AuthClientCredentials, AuthRefreshToken:
		need("token_url", a.TokenURL)
		if a.TokenURL != "" {
			if err := validURL(a.TokenURL); err != nil {
				bad("source.auth.token_url", "%v", err)
			}
		}
		need("client_id", a.ClientID)
		if a.Type == AuthRefreshToken {
			need("refresh_token", a.RefreshToken)
		} else if a.RefreshToken != "" {
			bad("source.auth.refresh_token", "is not used with auth type %s", a.Type)
		}
		switch a.AuthStyle {
		case "", "header", "body":
		default:
			bad("source.auth.auth_style", "%q must be header or body", a.AuthStyle)
		}
		unused(cmd)
	case AuthCommand:
		if len(a.Run) == 0 || strings.TrimSpace(a.Run[0]) == "" {
			bad("source.auth.run", "is required with auth type command (the program and its arguments)")
		}
		if a.Header == "" {
			a.Header = "Authorization"
		}
		if a.Prefix == nil {
			p := "Bearer "
			a.Prefix = &p
		}
		if a.TTL.Duration == 0 {
			a.TTL.Duration = DefaultAuthCommandTTL
		}
		unused(oauth)
	case "":
		bad("source.auth.type", "is required (one of %s)", strings.Join(AuthTypes, ", "))
	default:
		bad("source.auth.type", "%q is not one of %s", a.Type, strings.Join(AuthTypes, ", "))
	}
	if a.Type != AuthAPIKey && a.In != "" {
		bad("source.auth.in", "is not used with auth type %s", a.Type)
	}
}
