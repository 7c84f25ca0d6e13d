package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/internal/testutil"
)

// runSearch runs the search command in-process in UTC.
func runSearch(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := func(k string) string {
		if k == "OMNIBRAIN_TIMEZONE" {
			return "UTC"
		}
		return ""
	}
	err := run(context.Background(), append([]string{"--home", home, "search"}, args...), strings.NewReader(""), &out, &errOut, env)
	return out.String(), err
}

// A period named in the query filters the search; when nothing in it
// matches, the CLI says so before showing what matched at other times,
// and --json marks those hits.
func TestSearchCommandIsHonestAboutPeriods(t *testing.T) {
	home := t.TempDir()
	now := time.Now().UTC()
	yesterday := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
	lines := []string{
		`{"id":"old-1","source":"notes","time":"2001-05-14T09:00:00Z","title":"California power crisis","text":"Rolling blackouts again in the California power crisis."}`,
		fmt.Sprintf(`{"id":"new-1","source":"notes","time":%q,"title":"Lunch","text":"Lunch with Anna about the budget."}`, yesterday.Format(time.RFC3339)),
	}
	file := filepath.Join(t.TempDir(), "notes.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runImport(t, home, "jsonl", file); err != nil {
		t.Fatal(err)
	}

	lastYear := now.Year() - 1
	out, err := runSearch(t, home, "what did anyone say about the california power crisis last year?")
	if err != nil {
		t.Fatal(err)
	}
	note := fmt.Sprintf(`nothing matched "last year" (%d-01-01 to %d-12-31); these match the other words at other times:`, lastYear, lastYear)
	if !strings.HasPrefix(out, note) || !strings.Contains(out, "2001-05-14") || !strings.Contains(out, "id: old-1") {
		t.Fatalf("search output:\n%s\nwant it to start with %q and show old-1", out, note)
	}

	out, err = runSearch(t, home, "--json", "california power crisis last year")
	if err != nil {
		t.Fatal(err)
	}
	var hits []api.SearchHit
	if err := json.Unmarshal([]byte(out), &hits); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(hits) == 0 || hits[0].ID != "old-1" {
		t.Fatalf("--json hits: %s", out)
	}
	for _, h := range hits {
		o := h.OutsidePeriod
		if o == nil || o.Phrase != "last year" || !o.Since.Equal(time.Date(lastYear, 1, 1, 0, 0, 0, 0, time.UTC)) || !o.Until.Equal(time.Date(lastYear+1, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("hit %s: outside_period %+v", h.ID, o)
		}
	}

	// A period with matches filters, and says nothing about relaxing.
	out, err = runSearch(t, home, "--json", "budget yesterday")
	if err != nil {
		t.Fatal(err)
	}
	hits = nil
	if err := json.Unmarshal([]byte(out), &hits); err != nil || len(hits) != 1 || hits[0].ID != "new-1" || hits[0].OutsidePeriod != nil {
		t.Fatalf("budget yesterday: %v\n%s", err, out)
	}
	if strings.Contains(out, "outside_period") {
		t.Errorf("--json mentions outside_period for an in-period hit:\n%s", out)
	}
	out, err = runSearch(t, home, "budget", "in", "2001")
	if err != nil || !strings.Contains(out, `nothing matched "in 2001" (2001-01-01 to 2001-12-31)`) {
		t.Fatalf("budget in 2001: %v\n%s", err, out)
	}

	// Misspelt words match nothing: the hits come by meaning, and say so.
	out, err = runSearch(t, home, "blackoutz californa")
	if err != nil || !strings.HasPrefix(out, `none of the words of "blackoutz californa" were found; the closest by meaning:`) ||
		!strings.Contains(out, "id: old-1  (by meaning: none of the words)") {
		t.Fatalf("misspelt search: %v\n%s", err, out)
	}
	out, err = runSearch(t, home, "--json", "blackoutz californa")
	hits = nil
	if err := json.Unmarshal([]byte(out), &hits); err != nil || len(hits) == 0 || hits[0].ID != "old-1" || !hits[0].ByMeaning {
		t.Fatalf("misspelt search --json: %v\n%s", err, out)
	}
	if out, err := runSearch(t, home, "california"); err != nil || !strings.Contains(out, "id: old-1\n") || strings.Contains(out, "closest by meaning") {
		t.Errorf("a word match is marked by meaning: %v\n%s", err, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "search needs a query"},
		{[]string{"-n", "0", "x"}, "-n must be from 1 to 1000"},
		{[]string{"--mode", "magic", "x"}, "--mode must be hybrid, fts or vector"},
		{[]string{"--since", "yesterday", "x"}, "neither RFC 3339"},
		{[]string{"--since", "2001-05-15", "--until", "2001-05-14", "x"}, "--since must be before --until"},
	} {
		_, err := runSearch(t, home, c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("search %v = %v, want a usage error %q", c.args, err, c.want)
		}
	}
	// --until with a date includes that day; --source filters.
	out, err = runSearch(t, home, "--json", "--until", "2001-05-14", "--source", "notes", "california")
	if err != nil {
		t.Fatal(err)
	}
	hits = nil
	if err := json.Unmarshal([]byte(out), &hits); err != nil || len(hits) != 1 || hits[0].ID != "old-1" {
		t.Fatalf("--until 2001-05-14: %v\n%s", err, out)
	}
}

// The defects of issue 16 through the CLI, on real mail: a nonsense word
// finds nothing and says so; a period that holds mail but no match falls
// back to other times; the person filter reads names in any order, with
// or without an initial, and the local part of addresses; results show
// the sender; a Japanese word inside a run of Japanese text is found.
func TestSearchCommandRelevancePeopleAndScripts(t *testing.T) {
	enron := testutil.SharedData(t, "mail/enron/maildir")
	spam := testutil.SharedData(t, "mail/spamassassin/data")
	home, mails := t.TempDir(), t.TempDir()
	for _, f := range []string{
		filepath.Join(enron, "whalley-g/inbox/305."),                                 // Allocation of Capital, from "Buy, Rick"
		filepath.Join(enron, "allen-p/_sent_mail/282."),                              // refrigerators, from Phillip K Allen
		filepath.Join(spam, "hard-ham-1/00039.b2b936a8501444b213f61f9ff193b480.txt"), // iso-2022-jp
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mails, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := runImport(t, home, "maildir", mails); err != nil {
		t.Fatal(err)
	}
	// Last week holds mail, none of it about capital allocation.
	lastWeek := time.Now().UTC().AddDate(0, 0, -7)
	lines := []string{
		fmt.Sprintf(`{"id":"lunch","source":"notes","time":%q,"title":"Lunch","text":"Lunch with Anna about the budget.","people":["alice.wong@example.com","José Müller"]}`, lastWeek.Format(time.RFC3339)),
	}
	file := filepath.Join(t.TempDir(), "notes.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runImport(t, home, "jsonl", file); err != nil {
		t.Fatal(err)
	}

	search := func(args ...string) string {
		t.Helper()
		out, err := runSearch(t, home, args...)
		if err != nil {
			t.Fatalf("search %q: %v\n%s", args, err, out)
		}
		return out
	}
	if out := search("xyzzyqwerty"); out != "nothing found for \"xyzzyqwerty\"\n" {
		t.Errorf("nonsense query:\n%s", out)
	}
	out := search("capital allocation last week")
	if !strings.HasPrefix(out, `nothing matched "last week"`) || !strings.Contains(out, "Allocation of Capital") || strings.Contains(out, "none of the words") {
		t.Errorf("capital allocation last week:\n%s", out)
	}
	if !strings.Contains(out, "from Buy, Rick <rick.buy@enron.com>") {
		t.Errorf("the sender is not shown:\n%s", out)
	}
	for person, title := range map[string]string{
		"Rick Buy": "Allocation of Capital", "buy, rick": "Allocation of Capital", "RICK.BUY": "Allocation of Capital",
		"Phillip Allen": "refrigerators", "Allen, Phillip": "refrigerators", "Phillip K. Allen": "refrigerators",
		"Alice Wong": "Lunch", "Wong, Alice": "Lunch", "jose muller": "Lunch", "MÜLLER": "Lunch",
	} {
		// Words of every mail: the person alone decides.
		out := search("--json", "--person", person, "capital storm lunch")
		var hits []api.SearchHit
		if err := json.Unmarshal([]byte(out), &hits); err != nil {
			t.Fatalf("--person %q: %v\n%s", person, err, out)
		}
		if len(hits) != 1 || !strings.Contains(hits[0].Title, title) {
			t.Errorf("--person %q: %s, want only %q", person, out, title)
		}
	}
	// Filters alone list what they select, newest first.
	for person, title := range map[string]string{"Rick Buy": "Allocation of Capital", "Wong, Alice": "Lunch"} {
		var hits []api.SearchHit
		if out := search("--json", "--person", person); json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 1 || !strings.Contains(hits[0].Title, title) {
			t.Errorf("--person %q without a query: %s, want only %q", person, out, title)
		}
	}
	var listed []api.SearchHit
	if out := search("--json", "--source", "maildir"); json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 3 ||
		!slices.IsSortedFunc(listed, func(a, b api.SearchHit) int { return b.Time.Compare(a.Time) }) {
		t.Errorf("--source maildir without a query: %s, want the 3 mails newest first", out)
	}
	if out := search("--person", "Nobody Atall"); out != "nothing found with --person Nobody Atall\n" {
		t.Errorf("--person that names nobody, without a query:\n%s", out)
	}
	out = search("--json", "マイルストーン")
	var hits []api.SearchHit
	if err := json.Unmarshal([]byte(out), &hits); err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || !strings.Contains(hits[0].Title, "日本語の件名") || hits[0].From == "" || hits[0].ByMeaning {
		t.Errorf("マイルストーン: %s", out)
	}
}
