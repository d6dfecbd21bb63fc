package startheap

// The -update flag: `go test ./... -update` rewrites the goldens of every
// package, and a package without goldens must accept it too.
import _ "github.com/calricon/driftscan/fixtures/golden"
