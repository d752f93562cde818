package backend

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Redirects. Credentials (the API key, a URL's user and password) are
// given for one origin: the scheme, host and port of the base URL. A
// redirect is followed only within that origin, so no credential is ever
// sent elsewhere and a downgrade from https to http is never followed; a
// request with a body (every generation) is followed only on 307 or 308,
// which keep the method and body, since 301, 302 and 303 would turn the
// POST into a GET. Anything else is an error naming the Location, so that
// the user can give that address as the base URL if it is the right one.

// maxRedirects bounds the chain of redirects within the origin.
const maxRedirects = 5

// redirectError is a redirect that was not followed.
type redirectError struct {
	status   int
	location string // without userinfo
	why      string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("redirected to %s (HTTP %d), not followed: %s", e.location, e.status, e.why)
}

// checkRedirect is the http.Client policy of every backend.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	e := &redirectError{status: status, location: withoutUserinfo(req.URL)}
	switch {
	case len(via) > maxRedirects:
		e.why = fmt.Sprintf("more than %d redirects", maxRedirects)
	case !sameOrigin(first.URL, req.URL):
		e.why = "it leaves the scheme, host and port the request was sent to (credentials stay there); use that address as the base URL if it is the right one"
	case first.Method != http.MethodGet && first.Method != http.MethodHead && status != http.StatusTemporaryRedirect && status != http.StatusPermanentRedirect:
		e.why = "it would turn the " + first.Method + " into a GET (only 307 and 308 keep a request's body)"
	default:
		return nil
	}
	return e
}

// sameOrigin compares scheme, host and port, with the scheme's default
// port filled in.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// withoutUserinfo renders u without its user and password.
func withoutUserinfo(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	return c.String()
}

// WithoutUserinfo returns a base URL as it may be printed or stored:
// without the user and password it may carry (http://user:pass@host),
// which are sent as Basic authentication and never shown. A string that
// does not parse loses everything from "//" to the last "@" before the
// path.
func WithoutUserinfo(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return withoutUserinfo(u)
	}
	rest, ok := strings.CutPrefix(raw, "//")
	scheme := ""
	if !ok {
		var found bool
		scheme, rest, found = strings.Cut(raw, "://")
		if !found {
			return raw
		}
		scheme += "://"
	} else {
		scheme = "//"
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	if path != "" || strings.Contains(rest, "/") {
		return scheme + host + "/" + path
	}
	return scheme + host
}
