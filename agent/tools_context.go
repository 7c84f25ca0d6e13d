package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/omnibrain/omnibrain/store"
)

// ContextReader is what the context tools read besides items; *store.Store
// provides it.
type ContextReader interface {
	ItemsByID(ctx context.Context, ids []int64) ([]*store.Item, error)
	ItemsWithPerson(ctx context.Context, kind string, addrs []string, since, until time.Time, limit int) ([]*store.Item, error)
	OwnerAddresses(ctx context.Context) ([]string, error)
}

// maxGetItems bounds get_items: a handful of items, each as a snippet.
const maxGetItems = 10

type itemsArgs struct {
	ItemIDs []int64 `json:"item_ids" jsonschema:"item ids shown as (item id N), at most 10"`
}

func getItemsTool(d ToolDeps) (*Tool, error) {
	return NewTool("get_items", "Read several stored items at once (the start of each).", Read, 10*time.Second,
		func(ctx context.Context, a itemsArgs) (Result, error) {
			if len(a.ItemIDs) == 0 || len(a.ItemIDs) > maxGetItems {
				return Result{}, fmt.Errorf("item_ids needs 1 to %d ids", maxGetItems)
			}
			items, err := d.Context.ItemsByID(ctx, a.ItemIDs)
			if err != nil {
				return Result{}, err
			}
			res := Result{Text: fmt.Sprintf("%d item(s).", len(items))}
			for _, it := range items {
				res.Items = append(res.Items, cited(it, describe(it, d.Location), hitTextLen))
			}
			return res, nil
		})
}

type pastRepliesArgs struct {
	Address string `json:"address" jsonschema:"the person's email address"`
}

// maxPastReplies is how many of the owner's mails to a person are shown.
const maxPastReplies = 3

func pastRepliesTool(d ToolDeps) (*Tool, error) {
	return NewTool("past_replies", "Show how the owner usually writes to a person: their last mails to that address, with length, greeting and sign-off.", Read, 10*time.Second,
		func(ctx context.Context, a pastRepliesArgs) (Result, error) {
			addr := strings.ToLower(strings.TrimSpace(a.Address))
			if !strings.Contains(addr, "@") {
				return Result{}, fmt.Errorf("%q is not an email address", a.Address)
			}
			owner, err := d.Context.OwnerAddresses(ctx)
			if err != nil {
				return Result{}, err
			}
			for _, e := range d.OwnerEmails {
				if e = strings.ToLower(strings.TrimSpace(e)); e != "" && !slices.Contains(owner, e) {
					owner = append(owner, e)
				}
			}
			now := d.Now()
			mails, err := d.Context.ItemsWithPerson(ctx, "email", []string{addr}, now.AddDate(-2, 0, 0), now, 50)
			if err != nil {
				return Result{}, err
			}
			var sent []*store.Item
			for _, m := range mails {
				if slices.Contains(owner, strings.ToLower(m.Sender)) {
					sent = append(sent, m)
				}
			}
			if len(sent) == 0 {
				return Result{Text: fmt.Sprintf("The owner has not written to %s before (none stored).", addr)}, nil
			}
			res := Result{Text: styleOf(sent, addr)}
			for _, m := range sent[:min(len(sent), maxPastReplies)] {
				res.Items = append(res.Items, cited(m, fmt.Sprintf("(item id %d) %s", m.ID, m.Body), 400))
			}
			return res, nil
		})
}

// styleOf summarises the owner's mails to a person: how many, how long,
// the greetings and sign-offs they use.
func styleOf(sent []*store.Item, addr string) string {
	var words []int
	var greetings, signoffs []string
	for _, m := range sent {
		words = append(words, len(strings.Fields(m.Body)))
		lines := nonEmptyLines(m.Body)
		if len(lines) == 0 {
			continue
		}
		if g := lines[0]; len(g) <= 40 && (strings.HasSuffix(g, ",") || strings.HasSuffix(g, "!") || greetingWord(g)) {
			greetings = appendNew(greetings, g)
		}
		if s := lines[len(lines)-1]; len(lines) > 1 && len(s) <= 30 && !strings.HasSuffix(s, "?") {
			signoffs = appendNew(signoffs, s)
		}
	}
	sort.Ints(words)
	b := fmt.Sprintf("The owner's last %d mail(s) to %s, newest first: usually about %d words", len(sent), addr, words[len(words)/2])
	if len(greetings) > 0 {
		b += fmt.Sprintf("; greetings: %q", strings.Join(greetings[:min(3, len(greetings))], `", "`))
	}
	if len(signoffs) > 0 {
		b += fmt.Sprintf("; sign-offs: %q", strings.Join(signoffs[:min(3, len(signoffs))], `", "`))
	}
	return b + "."
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func greetingWord(line string) bool {
	f := strings.FieldsFunc(strings.ToLower(line), func(r rune) bool { return !unicode.IsLetter(r) })
	return len(f) > 0 && slices.Contains([]string{"hi", "hello", "dear", "hey", "hallo", "bonjour", "hola", "ciao", "liebe", "lieber"}, f[0])
}

func appendNew(list []string, s string) []string {
	if !slices.Contains(list, s) {
		list = append(list, s)
	}
	return list
}
