package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/api"
)

func usageCommand() *command {
	var days int
	return &command{
		name:    "usage",
		args:    "[--days N] [--json]",
		summary: "show model spend and tokens by day, task and model, and today's spend against the budget",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&days, "days", 7, "report the last `N` days, today included (1-366)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("usage takes no arguments (see omnibrain usage --help)")
			}
			if days < 1 || days > 366 {
				return usagef("--days must be from 1 to 366")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			rep, err := c.Usage(ctx, days)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(rep)
			}
			printUsageReport(e, rep)
			return nil
		},
	}
}

func printUsageReport(e *env, rep *api.UsageReport) {
	span := "today"
	if rep.Days > 1 {
		span = fmt.Sprintf("the last %d days (%s to %s)", rep.Days, rep.From, rep.To)
	}
	if rep.Total.Calls == 0 {
		e.printf("No model calls in %s.\n", span)
	} else {
		e.printf("Model usage in %s, %s: %s in %s.\n", span, rep.Timezone, dollars(rep.Total.CostUSD), callsText(rep.Total))
	}
	switch {
	case rep.BudgetUSD > 0:
		e.printf("Today: %s of the %s daily budget", dollars(rep.TodayUSD), dollars(rep.BudgetUSD))
		if rep.TodayUSD >= rep.BudgetUSD {
			e.printf(" — spent: background model work is paused until midnight; chat still works")
		}
		e.printf(".\n")
	default:
		e.printf("Today: %s (no daily budget: set llm.daily_budget_usd to cap background spend).\n", dollars(rep.TodayUSD))
	}
	if rep.HardLimitUSD > 0 {
		e.printf("Hard limit: %s a day, chat included.\n", dollars(rep.HardLimitUSD))
	}
	if rep.Total.Calls == 0 {
		return
	}
	for _, sec := range []struct {
		title string
		rows  []api.UsageTotal
	}{{"By day", rep.ByDay}, {"By task", rep.ByTask}, {"By model", rep.ByModel}} {
		width := 0
		for _, r := range sec.rows {
			width = max(width, len(r.Key))
		}
		e.printf("\n%s\n", sec.title)
		for _, r := range sec.rows {
			e.printf("  %-*s  %9s  %s\n", width, r.Key, dollars(r.CostUSD), callsText(r))
		}
	}
}

func callsText(t api.UsageTotal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d call", t.Calls)
	if t.Calls != 1 {
		b.WriteString("s")
	}
	if t.Errors > 0 {
		fmt.Fprintf(&b, " (%d failed)", t.Errors)
	}
	fmt.Fprintf(&b, ", %s tokens in, %s out", tokens(t.InputTokens), tokens(t.OutputTokens))
	return b.String()
}

func dollars(v float64) string {
	if v > 0 && v < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	default:
		return fmt.Sprint(n)
	}
}
