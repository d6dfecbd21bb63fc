package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/calricon/driftscan/breakglass"
	"github.com/calricon/driftscan/contract"
)

// defaultParams is --contract-params' default, NAMESPACE/NAME.
var defaultParams = contract.DefaultParams.Namespace + "/" + contract.DefaultParams.Name

func addContractParams(f *pflag.FlagSet, v *string) {
	f.StringVar(v, "contract-params", defaultParams, "NAMESPACE/NAME of the contract policies' break-glass ConfigMap: suspend lifts the contract's break-glass rules for the app there, resume ends the lift (nothing happens when it does not exist)")
}

// parseParams reads NAMESPACE/NAME.
func parseParams(s string) (contract.ParamsRef, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return contract.ParamsRef{}, fmt.Errorf("--contract-params %q: want NAMESPACE/NAME", s)
	}
	return contract.ParamsRef{Namespace: ns, Name: name}, nil
}

// lift records (on) or ends (off) the app's break-glass lift in the
// contract policies' params ConfigMap, and says what it changed.
func (o *breakglassOptions) lift(ctx context.Context, t breakglass.Target, on, dryRun bool) error {
	ref, err := parseParams(o.params)
	if err != nil {
		return err
	}
	var ch *breakglass.Change
	if on {
		ch, err = breakglass.Lift(ctx, o.dynamic, ref, t, dryRun)
	} else {
		ch, err = breakglass.Unlift(ctx, o.dynamic, ref, t, dryRun)
	}
	if err != nil {
		return fmt.Errorf("contract policies: %w", err)
	}
	if ch != nil {
		o.printChange(*ch, map[bool]string{true: "lifted the contract's break-glass rules in", false: "ended the lift in"}[on])
	}
	return nil
}
