package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/calricon/driftscan/report"
)

// exitError carries an exit code other than 2 out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// execute runs the command line and returns the process exit code: 0 no
// drift, 1 drift, 2 an error.
func execute(ctx context.Context, args []string, s streams) int {
	var prof profiler
	root := newRootCommand(s, &prof)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if perr := prof.finish(); perr != nil {
		fmt.Fprintf(s.Err, "error: %v\n", perr)
		if err == nil {
			return report.ExitError
		}
	}
	var ee exitError
	switch {
	case err == nil:
		return report.ExitOK
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(s.Err, "error: %v\n", err)
		return report.ExitError
	}
}

func newRootCommand(s streams, prof *profiler) *cobra.Command {
	root := &cobra.Command{
		Use:   "driftscan",
		Short: "Find where a live cluster no longer matches Git, field by field, and who changed it",
		Long: `driftscan compares the objects an app declares in Git with the live cluster,
field by field, and names who made each difference: a mutating webhook, an
operator, a deploy pipeline or a human with kubectl.

Exit codes: 0 no drift, 1 drift, 2 an error kept part of the scan from finishing.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return prof.start()
		},
	}
	prof.addFlags(root.PersistentFlags())
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newVersionCommand(s), newScanCommand(s), newBreakglassCommand(s), newDoctorCommand(s), newBackportCommand(s), newContractCommand(s))
	return root
}

// command is a subcommand's options in kubectl's shape: fill in what the
// flags leave open, check it, then run.
type command interface {
	Complete() error
	Validate() error
	Run(ctx context.Context) error
}

// completeValidateRun runs c the way kubectl runs its commands.
func completeValidateRun(ctx context.Context, c command) error {
	if err := c.Complete(); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	return c.Run(ctx)
}
