//go:build !unix

package source

import "context"

// lockFile is a no-op where flock(2) is missing: fetches of one repository
// serialize within the process only.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
