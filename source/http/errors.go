package httpsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// transportError is the error of a request that got no HTTP response:
// permanent (exit 1) for TLS verification, redirect loops and bad schemes,
// transient (exit 3) once retries are exhausted otherwise (tries says
// after how many attempts).
func (f *Fetcher) transportError(tries string, err error) *contract.Error {
	if permanentTransportError(err) {
		return &contract.Error{Class: contract.Permanent, Msg: f.redact(shortErr(err)), Hint: f.redact(contract.Hint(err))}
	}
	return &contract.Error{Class: contract.Transient, Msg: fmt.Sprintf("%s %s", f.redact(shortErr(err)), tries),
		Hint: "network error; the checkpoint is intact, run again later"}
}

func permanentTransportError(err error) bool {
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ce x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	var pe *contract.Error
	return errors.As(err, &ue) || errors.As(err, &he) || errors.As(err, &ce) || errors.As(err, &ve) ||
		errors.As(err, &pe) && pe.Class == contract.Permanent ||
		strings.Contains(err.Error(), "stopped after 10 redirects") ||
		strings.Contains(err.Error(), "unsupported protocol scheme")
}

// shortErr drops the "Get \"URL\": " prefix Go puts on client errors, since
// callers name the request themselves.
func shortErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// statusHint is the hint of a permanent HTTP status: a 401 names the auth
// type that was refused.
func (f *Fetcher) statusHint(status int) string {
	if a := f.cfg.Source.Auth; a != nil && (status == 401 || status == 403) {
		switch a.Type {
		case idsync.AuthClientCredentials, idsync.AuthRefreshToken, idsync.AuthCommand:
			return fmt.Sprintf("the API refused the credentials of source.auth (type %s) even with a fresh token; check them", a.Type)
		}
		return fmt.Sprintf("the API refused the credentials of source.auth (type %s); check them", a.Type)
	}
	return "HTTP status not in retry.on_status: not retried"
}
