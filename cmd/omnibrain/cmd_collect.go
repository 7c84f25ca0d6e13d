package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/omnibrain/omnibrain/api"
)

func collectCommand() *command {
	return &command{
		name:    "collect",
		args:    "[gmail|calendar|github]...",
		summary: "run one collection pass now (all collectors when none is named) and report what was added",
		run: func(ctx context.Context, e *env, args []string) error {
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			res, err := c.Collect(ctx, args...)
			var ae *api.Error
			if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
				return usagef("collect: %s", ae.Message) // only the names can be wrong
			}
			if err != nil {
				return apiError(err)
			}
			if e.json {
				if err := e.printJSON(res); err != nil {
					return err
				}
			} else {
				printCollect(e, res)
			}
			if len(args) == 0 && !slices.ContainsFunc(res, func(r api.CollectResult) bool { return r.State != "disabled" }) {
				// Nothing set up is no success either, as for `collect gmail`.
				err := errors.New("nothing is set up to collect from (connect an account: omnibrain auth google, omnibrain auth github)")
				if e.json {
					return errSilent
				}
				return err
			}
			for _, r := range res {
				var err error
				switch {
				case r.State == "failed":
					err = fmt.Errorf("%s failed: %s", r.Collector, r.Error)
				case r.State == "disabled" && len(args) > 0:
					// Asked for by name, it collected nothing: a script
					// running `collect gmail` must not take that for success.
					err = fmt.Errorf("%s is not set up, nothing was collected", r.Collector)
				}
				if err != nil && e.json {
					return errSilent
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func printCollect(e *env, res []api.CollectResult) {
	if len(res) == 0 {
		e.printf("no collectors are registered\n")
		return
	}
	for _, r := range res {
		line := fmt.Sprintf("%-9s %-8s", r.Collector, r.State)
		switch r.State {
		case "ok":
			line += fmt.Sprintf(" %d new or changed items (%d seen", r.Stored, r.Seen)
			if r.Skipped > 0 {
				line += fmt.Sprintf(", %d malformed skipped", r.Skipped)
			}
			line += fmt.Sprintf(") in %.1fs", r.Seconds)
			if r.Detail != "" {
				line += " — " + r.Detail
			}
		case "disabled":
			line += " " + r.Fix
		default:
			line += " " + r.Error
			if r.Fix != "" && !strings.Contains(r.Error, r.Fix) {
				line += " — to fix it, " + r.Fix
			}
		}
		e.printf("%s\n", line)
	}
}
