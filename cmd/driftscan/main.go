// Command driftscan finds where a live Kubernetes cluster no longer matches
// Git, field by field, and who made each difference.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/calricon/driftscan/run"

	_ "github.com/calricon/driftscan/cmd/driftscan/internal/startheap" // before the other packages' init
)

func main() {
	run.RunAsHelm() // when started as kustomize's helm: answers and exits
	paceGC()
	limitToContainer(memlimit.FromCgroup)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

// streams are the command's standard streams, injected for tests.
type streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}
