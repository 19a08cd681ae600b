package serve

import (
	"net"
	"net/http"
	"strings"
)

// loopbackOnly guards a server without a token (docs/serve.md,
// "Security"). Loopback keeps other machines out, but not the web pages
// its user's browser opens: a page of another site can send a POST to
// 127.0.0.1 (a "simple" request needs no preflight), and a DNS-rebinding
// page (its own name resolving to 127.0.0.1) is same-origin to the
// browser and reads the replies: a consumer's batch ID to acknowledge,
// events lost to it. So a request must name this machine (a Host that is
// localhost or a loopback address, which a rebinding page cannot send)
// and must not come from another origin (Go's cross-origin protection:
// Sec-Fetch-Site, else Origin against Host). Scripts, curl and n8n send
// neither header and a loopback Host: they are served as before. A token
// needs none of this: a page cannot send it without knowing it.
func loopbackOnly(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !loopback(strings.Trim(host, "[]")) {
			writeError(w, http.StatusForbidden, exitUsage, "Host "+r.Host+" is not this machine: without $"+TokenEnv+
				" the server answers requests to 127.0.0.1, ::1 or localhost only (a web page under another name may not use it)")
			return
		}
		if err := cop.Check(r); err != nil {
			writeError(w, http.StatusForbidden, exitUsage, "a request from a web page of another origin: refused without $"+TokenEnv+" ("+err.Error()+")")
			return
		}
		next.ServeHTTP(w, r)
	})
}
