package main

import (
	"context"
	"fmt"
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
			for _, r := range res {
				if r.State == "failed" {
					if e.json {
						return errSilent
					}
					return fmt.Errorf("%s failed: %s", r.Collector, r.Error)
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
