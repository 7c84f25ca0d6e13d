package main

import (
	"context"
	"encoding/json"
)

func explainCommand() *command {
	return &command{
		name: "explain",
		args: "ID [--json]",
		summary: "explain what omnibrain decided about an item (the id it was collected or imported with) or a proposal: " +
			"the triage factors, the proposal, what you were told and why",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("explain needs one id: an item's id (see search --json) or a proposal id")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			x, err := c.Explain(ctx, args[0])
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(json.RawMessage(x.Detail))
			}
			e.printf("%s\n", x.Text)
			return nil
		},
	}
}
