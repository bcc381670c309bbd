package loadgen

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// NewHTTPClient returns a client tuned for many long streams to one host:
// a connection per stream (no cap below the concurrency), HTTP/1.1 only (an
// HTTP/2 server would multiplex every stream over one connection and one
// reader goroutine), no transparent gzip (which would buffer chunks), no
// proxy (a proxy would be measured too), larger buffers for bursts, and no
// redirects: the load goes to the address the user gave and nowhere else
// (a redirect is recorded as an HTTP error naming where it pointed).
// maxConns is the most streams that will be open at once.
func NewHTTPClient(maxConns int) *http.Client {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: maxConns + 16,
		MaxConnsPerHost:     0, // no limit
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
		ReadBufferSize:      16 << 10,
		WriteBufferSize:     16 << 10,
	}
	return &http.Client{Transport: tr, CheckRedirect: RefuseRedirects}
}

// RefuseRedirects, as an http.Client's CheckRedirect, makes the client
// return a redirect as the response instead of following it.
func RefuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
