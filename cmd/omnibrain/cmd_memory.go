package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/api"
)

func memoryCommand() *command {
	var category string
	var pending, pin bool
	return &command{
		name: "memory",
		args: "[--json] [--pending] | add TEXT [--category C] [--pin] | forget ID | why ID | keep ID | drop ID",
		summary: "what omnibrain remembers about you: list the facts (HOME/MEMORY.md mirrors them), add one, forget one, see where one came from, " +
			"keep or drop a fact suggested from mail",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&category, "category", "", "the category `C` of a fact to add: family, preferences, events, notes, recent_context (default: by simple rules)")
			fs.BoolVar(&pending, "pending", false, "list the suggestions waiting for your keep or drop")
			fs.BoolVar(&pin, "pin", false, "add: put the fact into every prompt")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			sub := ""
			if len(args) > 0 {
				sub, args = args[0], args[1:]
			}
			one := func() (string, error) {
				if len(args) != 1 {
					return "", usagef("memory %s needs one fact id, like m12", sub)
				}
				return args[0], nil
			}
			switch sub {
			case "", "list":
				if len(args) > 0 {
					return usagef("memory lists with no arguments (see omnibrain memory --help)")
				}
				return memoryList(ctx, e, pending)
			case "add":
				text := strings.TrimSpace(strings.Join(args, " "))
				if text == "" {
					return usagef("memory add needs the fact's text")
				}
				c, err := e.api(ctx)
				if err != nil {
					return err
				}
				res, err := c.MemoryAdd(ctx, api.MemoryAddRequest{Text: text, Category: category, Pinned: pin})
				if err != nil {
					return apiError(err)
				}
				return printChange(e, res, "Remembered")
			case "forget", "why", "keep", "drop":
				id, err := one()
				if err != nil {
					return err
				}
				c, err := e.api(ctx)
				if err != nil {
					return err
				}
				switch sub {
				case "why":
					ex, err := c.MemoryWhy(ctx, id)
					if err != nil {
						return apiError(err)
					}
					if e.json {
						return e.printJSON(ex)
					}
					printWhy(e, ex)
					return nil
				case "forget":
					res, err := c.MemoryForget(ctx, id)
					if err != nil {
						return apiError(err)
					}
					return printChange(e, res, "Forgotten")
				default:
					res, err := c.MemoryDecide(ctx, id, sub)
					if err != nil {
						return apiError(err)
					}
					return printChange(e, res, map[string]string{"keep": "Kept", "drop": "Dropped"}[sub])
				}
			}
			return usagef("memory: unknown subcommand %q (add, forget, why, keep, drop)", sub)
		},
	}
}

// memoryFactJSON is the contract's shape of a fact in `memory --json`.
type memoryFactJSON struct {
	ID       string    `json:"id"`
	Text     string    `json:"text"`
	Category string    `json:"category"`
	Source   string    `json:"source"`
	Created  time.Time `json:"created"`
}

func memoryList(ctx context.Context, e *env, pending bool) error {
	c, err := e.api(ctx)
	if err != nil {
		return err
	}
	l, err := c.Memory(ctx)
	if err != nil {
		return apiError(err)
	}
	for _, file := range sortedKeys(l.Problems) {
		fmt.Fprintf(e.stderr, "warning: %s\n", l.Problems[file])
	}
	facts := l.Facts
	if pending {
		facts = l.Pending
	}
	if e.json {
		out := make([]memoryFactJSON, 0, len(facts))
		for _, f := range facts {
			out = append(out, memoryFactJSON{ID: f.ID, Text: f.Text, Category: f.Category, Source: f.Source, Created: f.Created})
		}
		return e.printJSON(out)
	}
	switch {
	case len(facts) == 0 && pending:
		e.printf("No suggestions are waiting.\n")
	case len(facts) == 0:
		e.printf("I remember nothing about you yet. Say \"remember that …\" in chat, or: omnibrain memory add TEXT\n")
	}
	cat := ""
	for _, f := range facts {
		if f.Category != cat && !pending {
			cat = f.Category
			e.printf("\n%s\n", strings.ToUpper(cat[:1])+strings.ReplaceAll(cat[1:], "_", " "))
		}
		pin := ""
		if f.Pinned {
			pin = " (pinned)"
		}
		e.printf("  [%s] %s%s — from %s, %s\n", f.ID, f.Text, pin, f.Source, f.Created.Local().Format("2 Jan 2006"))
	}
	if !pending && len(l.Pending) > 0 {
		e.printf("\n%d suggestion(s) from your mail wait for you: omnibrain memory --pending\n", len(l.Pending))
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func printChange(e *env, res *api.MemoryChange, verb string) error {
	if e.json {
		return e.printJSON(res)
	}
	f := res.Fact
	if res.Merged {
		e.printf("Already known: [%s] %s\n", f.ID, f.Text)
		return nil
	}
	e.printf("%s: [%s] %s (%s)\n", verb, f.ID, f.Text, f.Category)
	for _, s := range res.Superseded {
		e.printf("  replaces [%s] %s\n", s.ID, s.Text)
	}
	return nil
}

func printWhy(e *env, ex *api.MemoryWhy) {
	f := ex.Fact
	e.printf("[%s] %s\n", f.ID, orDash(f.Text))
	e.printf("  category: %s, state: %s\n", f.Category, f.State)
	e.printf("  source: %s\n", f.Source)
	if f.SourceText != "" {
		e.printf("  from the words: %q\n", f.SourceText)
	}
	e.printf("  created %s, updated %s\n", f.Created.Local().Format(time.DateTime), f.Updated.Local().Format(time.DateTime))
	if f.Expires != nil {
		e.printf("  expires %s\n", f.Expires.Local().Format(time.DateTime))
	}
	if f.Note != "" {
		e.printf("  last change: %s\n", f.Note)
	}
	for _, r := range ex.Replaced {
		e.printf("  it replaced [%s] %s\n", r.ID, orDash(r.Text))
	}
	for _, s := range ex.SupersededBy {
		e.printf("  replaced by [%s] %s (%s)\n", s.ID, orDash(s.Text), s.State)
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
