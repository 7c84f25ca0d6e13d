package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/internal/suggest"
)

func searchCommand() *command {
	var (
		limit                int
		since, until         string
		source, person, mode string
	)
	return &command{
		name: "search",
		args: "[-n K] [--since T] [--until T] [--source S] [--person P] [--mode M] [QUERY]",
		summary: "search everything stored (mail, events, GitHub, documents) by words and meaning; " +
			`date words in the query ("yesterday", "last week", "on Dec 30", "in March", 2001-05-14) narrow it; ` +
			"without a query, list what the flags select, newest first",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "n", 10, "show at most `K` results (1-1000)")
			fs.StringVar(&since, "since", "", "only items at or after `T` (RFC 3339, or YYYY-MM-DD in your timezone)")
			fs.StringVar(&until, "until", "", "only items before `T` (RFC 3339), or up to and including the day YYYY-MM-DD")
			fs.StringVar(&source, "source", "", "only items from `S`: sources or kinds, comma-separated (gmail, maildir, calendar, github, email, event, …)")
			fs.StringVar(&person, "person", "", "only items involving `P`, a name or address")
			fs.StringVar(&mode, "mode", "hybrid", "`M` is hybrid, fts (keywords only) or vector (meaning only)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			query := strings.TrimSpace(strings.Join(args, " "))
			if query == "" && since == "" && until == "" && source == "" && person == "" {
				return usagef("search needs a query, or a filter (--person, --source, --since, --until) to list what it selects (see omnibrain search --help)")
			}
			if limit < 1 || limit > 1000 {
				return usagef("search: -n must be from 1 to 1000")
			}
			switch mode {
			case "hybrid", "fts", "vector":
			default:
				return usagef("search: --mode must be hybrid, fts or vector")
			}
			cfg, err := e.lenientConfig(ctx)
			if err != nil {
				return err
			}
			req := api.SearchRequest{Query: query, Limit: limit, Source: source, Person: person, Mode: mode}
			if req.Since, err = parseSearchTime(since, cfg.Location, false); err != nil {
				return usagef("search: --since: %v", err)
			}
			if req.Until, err = parseSearchTime(until, cfg.Location, true); err != nil {
				return usagef("search: --until: %v", err)
			}
			if !req.Since.IsZero() && !req.Until.IsZero() && !req.Since.Before(req.Until) {
				return usagef("search: --since must be before --until")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			if err := checkSources(ctx, c, source); err != nil {
				return err
			}
			hits, err := c.Search(ctx, req)
			if err != nil {
				return apiError(err)
			}
			if hits == nil {
				hits = []api.SearchHit{}
			}
			if e.json {
				return e.printJSON(hits)
			}
			if len(hits) == 0 {
				// Name the filters: with a mistyped --source, "nothing
				// found" alone reads as if the words matched nothing.
				var filters []string
				for _, f := range []struct{ name, v string }{{"--source", source}, {"--person", person}, {"--since", since}, {"--until", until}} {
					if f.v != "" {
						filters = append(filters, fmt.Sprintf("%s %s", f.name, f.v))
					}
				}
				switch {
				case query == "":
					e.printf("nothing found with %s\n", strings.Join(filters, ", "))
				case len(filters) > 0:
					e.printf("nothing found for %q with %s\n", query, strings.Join(filters, ", "))
				default:
					e.printf("nothing found for %q\n", query)
				}
				return nil
			}
			if o := hits[0].OutsidePeriod; o != nil {
				e.printf("nothing matched %q (%s); these match the other words at other times:\n",
					o.Phrase, periodText(o.Since, o.Until, cfg.Location))
			}
			if !slices.ContainsFunc(hits, func(h api.SearchHit) bool { return !h.ByMeaning }) {
				e.printf("none of the words of %q were found; the closest by meaning:\n", query)
			}
			for i, h := range hits {
				title := h.Title
				if title == "" {
					title = "(no title)"
				}
				when := h.Time.In(cfg.Location).Format("2006-01-02 15:04")
				if h.DateUncertain != "" {
					when += " (date guessed)" // explain ID says how
				}
				e.printf("%2d. %s  %s  %s\n", i+1, when, h.Source, e.style(bold, title))
				if h.From != "" {
					e.printf("    from %s\n", h.From)
				}
				if h.Snippet != "" {
					e.printf("    %s\n", e.highlight(h.Snippet))
				}
				if h.ByMeaning {
					e.printf("    id: %s  (by meaning: none of the words)\n", h.ID)
				} else {
					e.printf("    id: %s\n", h.ID)
				}
			}
			return nil
		},
	}
}

// parseSearchTime reads RFC 3339 or a date in the owner's timezone; a date
// given as the end of a range includes that whole day.
func parseSearchTime(s string, loc *time.Location, endOfDay bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2001-05-14T09:00:00Z) nor a date (2001-05-14)", s)
	}
	if endOfDay {
		d = d.AddDate(0, 0, 1)
	}
	return d, nil
}

// periodText shows [since, until) as the days it covers.
func periodText(since, until time.Time, loc *time.Location) string {
	from, to := since.In(loc), until.In(loc).Add(-time.Nanosecond)
	if from.Format(time.DateOnly) == to.Format(time.DateOnly) {
		return from.Format(time.DateOnly)
	}
	return from.Format(time.DateOnly) + " to " + to.Format(time.DateOnly)
}

// knownSources are the sources and kinds omnibrain's own collectors and
// importers store; a JSONL import adds the sources its lines name.
var knownSources = []string{"gmail", "calendar", "github", "mbox", "maildir", "email", "event", "notification", "pr", "issue", "document"}

// checkSources rejects a --source that names nothing omnibrain stores: a
// typo would otherwise read as "nothing found".
func checkSources(ctx context.Context, c *api.Client, list string) error {
	if list == "" {
		return nil
	}
	st, err := c.Status(ctx)
	if err != nil {
		return apiError(err)
	}
	valid := slices.Clone(knownSources)
	for _, sc := range st.Items {
		if !slices.Contains(valid, sc.Source) {
			valid = append(valid, sc.Source)
		}
	}
	for _, src := range strings.Split(list, ",") {
		src = strings.TrimSpace(src)
		if src == "" || slices.Contains(valid, src) {
			continue
		}
		hint := ""
		if s := suggest.Closest(src, valid); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		return usagef("search: unknown --source %q%s: want one of %s", src, hint, strings.Join(valid, ", "))
	}
	return nil
}
