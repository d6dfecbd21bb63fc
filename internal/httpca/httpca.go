// Package httpca builds the HTTP transport of a client that trusts extra
// certificates (a config's caFile) besides the system's: one place for
// the chart fetcher and the forge client.
package httpca

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
)

// ErrNoPEM is returned for a CA bundle that holds no PEM certificate.
var ErrNoPEM = errors.New("holds no PEM certificate")

// Transport is http.DefaultTransport's copy (the proxy from the
// environment, its timeouts) trusting ca besides the system's
// certificates, with TLS 1.2 at least; with no ca, the system's alone.
func Transport(ca []byte) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if len(ca) == 0 {
		return t, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(ca) {
		return nil, ErrNoPEM
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}
