package backend

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// NormalizeURL is a server's base URL written one way, so that the same
// server named twice is seen to be one: the scheme and the host in lower
// case, the scheme's default port dropped (http://h:80 is http://h), the
// trailing slashes of the path dropped. The user and password, which the
// requests carry, are kept; ServerKey leaves them out. A URL that is not
// http or https with a host is an error.
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "" {
		return "", fmt.Errorf("want an http or https URL such as http://gpu1:30000")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	switch {
	case port != "":
		u.Host = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"): // IPv6
		u.Host = "[" + host + "]"
	default:
		u.Host = host
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// ServerKey is what tells servers apart: the URL normalized, without its
// user and password (one server reached with two keys is still one).
func ServerKey(raw string) string {
	n, err := NormalizeURL(raw)
	if err != nil {
		return raw
	}
	return WithoutUserinfo(n)
}

// NormalizeURLs normalizes each of the URLs given to flag and refuses a
// server named twice (with a trailing slash, other credentials, its
// default port or the host in another case): the two would be sized,
// counted and reported as two servers.
func NormalizeURLs(flag string, raws []string) ([]string, error) {
	out := make([]string, len(raws))
	seen := map[string]int{}
	for i, raw := range raws {
		n, err := NormalizeURL(raw)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %v", flag, WithoutUserinfo(raw), err)
		}
		key := WithoutUserinfo(n)
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("--%s %q and --%s %q name the same server (%s): give each server once",
				flag, WithoutUserinfo(raws[j]), flag, WithoutUserinfo(raw), key)
		}
		seen[key] = i
		out[i] = n
	}
	return out, nil
}
