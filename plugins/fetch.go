package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Limits of what is read from a plugin's server.
const (
	// FetchTimeout bounds fetching a manifest.
	FetchTimeout = 10 * time.Second
	// DefaultCallTimeout bounds one tool call.
	DefaultCallTimeout = 30 * time.Second
	// MaxResponse bounds a tool call's answer.
	MaxResponse = 256 << 10
)

// errRedirect stops the client at a redirect: a manifest or a call goes
// exactly where the owner confirmed, never on to another host or scheme.
var errRedirect = errors.New("redirects are not followed")

// NewHTTPClient is the client for manifests and calls: no redirects, no
// cookies; timeouts come from each request's context.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = 64 << 10
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

// ParseSourceURL checks a manifest URL: https, or http to this machine
// unless insecure.
func ParseSourceURL(raw string, insecure bool) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("manifest URL: %w", err)
	}
	if err := checkURL(u, insecure); err != nil {
		return nil, fmt.Errorf("manifest URL %w", err)
	}
	return u, nil
}

// FetchManifest downloads the manifest at u within FetchTimeout and
// maxManifestSize.
func FetchManifest(ctx context.Context, client *http.Client, u *url.URL) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("fetch manifest %s: no answer within %s", u, FetchTimeout)
		}
		return nil, fmt.Errorf("fetch manifest: %w", err)
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 {
		return nil, fmt.Errorf("fetch manifest %s: it redirects to %q; add that URL instead if you trust it", u, loc)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch manifest %s: HTTP %d", u, resp.StatusCode)
	}
	body, over, err := readLimited(resp.Body, maxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("fetch manifest %s: %w", u, err)
	}
	if over {
		return nil, fmt.Errorf("fetch manifest %s: larger than %d bytes", u, maxManifestSize)
	}
	return body, nil
}

// readLimited reads at most limit bytes and reports whether there was more.
func readLimited(r io.Reader, limit int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}

// loopbackHost reports whether host names this machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
