package httpca

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The -update flag: `go test ./... -update` rewrites the goldens of every
// package, and a package without goldens must accept it too.
import _ "github.com/calricon/driftscan/fixtures/golden"

// A server whose certificate is in the bundle is trusted; without the
// bundle it is not; a bundle with no certificate is an error.
func TestTransportTrustsTheBundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, tt := range []struct {
		ca    []byte
		trust bool
	}{{ca, true}, {nil, false}} {
		tr, err := Transport(tt.ca)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != tt.trust {
			t.Errorf("bundle %v: error %v, want trusted %v", tt.ca != nil, err, tt.trust)
		}
	}
	if _, err := Transport([]byte("not a certificate")); !errors.Is(err, ErrNoPEM) {
		t.Errorf("a bundle with no certificate: %v", err)
	}
}
