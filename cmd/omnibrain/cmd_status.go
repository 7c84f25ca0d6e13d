package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/health"
)

func statusCommand() *command {
	return &command{
		name:    "status",
		summary: "show what is configured, what is healthy, item counts and disk use",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("status takes no arguments")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			st, err := c.Status(ctx)
			if err != nil {
				return apiError(err)
			}
			if e.json {
				return e.printJSON(st)
			}
			if st.Daemon {
				e.printf("omnibrain %s — daemon running (pid %d, up %s)\n", st.Version, st.PID, time.Since(st.StartedAt).Round(time.Second))
			} else {
				e.printf("omnibrain %s — daemon not running (start it with: omnibrain run, or omnibrain service start)\n", st.Version)
			}
			e.printf("home      %s (%s)\ntimezone  %s\noverall   %s\n", st.Home, humanBytes(st.DiskBytes), st.Timezone, st.Overall)

			var conf []string
			for k, v := range st.Configured {
				mark := "no"
				if v {
					mark = "yes"
				}
				conf = append(conf, k+": "+mark)
			}
			sort.Strings(conf)
			e.printf("configured  %s\n", strings.Join(conf, ", "))

			e.printf("\ncomponents\n")
			now := time.Now()
			for _, comp := range st.Components {
				e.printf("  %-12s %-9s %s\n", comp.Name, comp.State, componentSummary(comp, now))
			}
			if st.NotificationsWaiting > 0 {
				why := "omnibrain notifications reads them"
				if !st.Configured["telegram"] {
					why = "no Telegram bot is set up; omnibrain notifications reads them"
				}
				e.printf("\nnotifications  %s waiting (%s)\n", e.style(yellow, strconv.FormatInt(st.NotificationsWaiting, 10)), why)
			}
			e.printf("\nitems  %d total\n", st.TotalItems)
			for _, c := range st.Items {
				e.printf("  %-12s %d\n", c.Source, c.Items)
			}
			return nil
		},
	}
}

// componentSummary is a component's detail followed by what else is known
// (last success, last error, restarts), without dangling separators when
// some of it is missing.
func componentSummary(c health.Component, now time.Time) string {
	var more []string
	if !c.LastSuccess.IsZero() {
		more = append(more, fmt.Sprintf("last ok %s ago", now.Sub(c.LastSuccess).Round(time.Second)))
	}
	if c.LastError != "" && c.State != health.OK {
		more = append(more, "last error: "+c.LastError)
	}
	if c.Restarts > 0 {
		more = append(more, fmt.Sprintf("restarted %d times", c.Restarts))
	}
	switch {
	case len(more) == 0:
		return c.Detail
	case c.Detail == "":
		return strings.Join(more, "; ")
	}
	return c.Detail + " (" + strings.Join(more, "; ") + ")"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
