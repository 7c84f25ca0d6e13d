package main

import (
	"context"
	"flag"
	"strings"
)

func briefingCommand() *command {
	var list int
	var refresh bool
	return &command{
		name: "briefing",
		args: "[morning|evening|weekly] [--refresh] [--list N] [--json]",
		summary: "show today's briefing (morning by default), making and sending it if there is none yet; " +
			"the same briefing the schedule sends, one per kind per day (--refresh makes it again with what arrived since)",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&list, "list", 0, "list the last `N` stored briefings of the kind (any kind if none is given) instead")
			fs.BoolVar(&refresh, "refresh", false, "make today's briefing again with the mail that arrived since it was made, and replace it")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 1 {
				return usagef("briefing takes at most one kind: morning, evening or weekly")
			}
			kind := ""
			if len(args) == 1 {
				kind = strings.ToLower(args[0])
				switch kind {
				case "morning", "evening", "weekly":
				default:
					return usagef("unknown briefing %q: want morning, evening or weekly%s", args[0], didYouMean(args[0], []string{"morning", "evening", "weekly"}))
				}
			}
			if list < 0 {
				return usagef("--list wants a positive number")
			}
			if list > 0 && refresh {
				return usagef("briefing: --list and --refresh do not go together")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			if list > 0 {
				bs, err := c.Briefings(ctx, kind, list)
				if err != nil {
					return apiError(err)
				}
				if e.json {
					return e.printJSON(bs)
				}
				if len(bs) == 0 {
					e.printf("no briefings stored yet\n")
				}
				for _, b := range bs {
					e.printf("%s  %-7s  %s\n", b.Day, b.Kind, firstLine(b.Narrative, b.Text))
				}
				return nil
			}
			if kind == "" {
				kind = "morning"
			}
			get := c.Briefing
			if refresh {
				get = c.RefreshBriefing
			}
			b, err := get(ctx, kind)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(b)
			}
			if b.Narrative != "" {
				e.printf("%s\n\n", b.Narrative)
			}
			e.printf("%s\n", b.Text)
			return nil
		},
	}
}

// firstLine is the first line of the first non-empty text.
func firstLine(texts ...string) string {
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			l, _, _ := strings.Cut(t, "\n")
			return l
		}
	}
	return ""
}
