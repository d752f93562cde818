package backend

import (
	"strings"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://h:30000":              "http://h:30000",
		"http://h:30000/":             "http://h:30000",
		"HTTP://GPU1.Example:30000//": "http://gpu1.example:30000",
		"http://h:80/v1/":             "http://h/v1",
		"https://h:443":               "https://h",
		"https://h:80":                "https://h:80",
		"http://u:p@H:30000/":         "http://u:p@h:30000",
		"http://[::1]:80/":            "http://[::1]",
		"http://[::1]:30000":          "http://[::1]:30000",
	} {
		got, err := NormalizeURL(raw)
		if err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"ftp://h", "h:30000", "http://", "://x"} {
		if got, err := NormalizeURL(raw); err == nil {
			t.Errorf("NormalizeURL(%q) = %q, want an error", raw, got)
		}
	}
}

// One server named twice (a trailing slash, credentials or not, its
// default port, its host's case) is refused, naming both without the
// password.
func TestNormalizeURLsRefusesDuplicates(t *testing.T) {
	for _, pair := range [][2]string{
		{"http://h:30000", "http://h:30000/"},
		{"http://h:30000", "http://user:secret@h:30000"},
		{"http://h", "http://H:80/"},
	} {
		_, err := NormalizeURLs("url", pair[:])
		if err == nil || !strings.Contains(err.Error(), "name the same server") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %v, want them refused as one server, without the password", pair, err)
		}
	}
	got, err := NormalizeURLs("url", []string{"http://a:1/", "http://a:2"})
	if err != nil || got[0] != "http://a:1" || got[1] != "http://a:2" {
		t.Errorf("two servers: %q, %v", got, err)
	}
}
