package main

import (
	"context"
	"flag"
	"strconv"
	"strings"
)

func notificationsCommand() *command {
	var limit int
	return &command{
		name: "notifications",
		args: "[clear [ID]...] [-n N] [--json]",
		summary: "read the notifications waiting for delivery (all of them while no Telegram bot is set up); " +
			"clear marks them read (the given ids, or all), so they are not sent later",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "n", 100, "show at most `N` (1-1000), the newest")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if limit < 1 || limit > 1000 {
				return usagef("notifications: -n must be from 1 to 1000")
			}
			if len(args) > 0 && args[0] != "clear" {
				return usagef("notifications: unknown action %q: want clear%s", args[0], didYouMean(args[0], []string{"clear"}))
			}
			var ids []int64
			if len(args) > 0 {
				for _, a := range args[1:] {
					id, err := strconv.ParseInt(strings.TrimPrefix(a, "#"), 10, 64)
					if err != nil || id <= 0 {
						return usagef("notifications clear: %q is not a notification id (omnibrain notifications lists them)", a)
					}
					ids = append(ids, id)
				}
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			if len(args) > 0 {
				res, err := c.ClearNotifications(ctx, ids)
				if err != nil {
					return apiError(err)
				}
				if e.json {
					return e.printJSON(res)
				}
				e.printf("cleared %d %s\n", res.Cleared, plural(res.Cleared, "notification", "notifications"))
				return nil
			}
			ns, err := c.Notifications(ctx, limit)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(ns)
			}
			if len(ns) == 0 {
				e.printf("no notifications wait\n")
				return nil
			}
			loc := e.location()
			e.printf("%d %s waiting for delivery, oldest first:\n", len(ns), plural(len(ns), "notification", "notifications"))
			for _, n := range ns {
				e.printf("\n%s  %s  %s\n", e.style(bold, "#"+strconv.FormatInt(n.ID, 10)), n.Created.In(loc).Format("Mon Jan 2 15:04"), n.Level)
				for _, line := range strings.Split(strings.TrimSpace(n.Text), "\n") {
					e.printf("    %s\n", line)
				}
				if n.ProposalID != "" {
					e.printf("    → omnibrain proposals show %s\n", n.ProposalID)
				}
			}
			e.printf("\nclear them with: omnibrain notifications clear (or name the ids)\n")
			return nil
		},
	}
}
