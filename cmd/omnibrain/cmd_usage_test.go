package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/store"
)

func TestUsageCommand(t *testing.T) {
	home := t.TempDir()
	vars := map[string]string{"OMNIBRAIN_HOME": home, "OMNIBRAIN_TIMEZONE": "UTC", "OMNIBRAIN_LLM_PROVIDER": "none"}
	cli := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
		return out.String(), err
	}
	out, err := cli("usage")
	if err != nil || !strings.Contains(out, "No model calls in the last 7 days") {
		t.Fatalf("empty: %q %v", out, err)
	}
	// Empty lists are [] for scripts, never null.
	if out, err := cli("usage", "--json"); err != nil || strings.Contains(out, "null") || !strings.Contains(out, `"by_day": []`) {
		t.Errorf("empty --json: %v\n%s", err, out)
	}

	st, err := store.Open(context.Background(), filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	today, yesterday := now.Format(time.DateOnly), now.AddDate(0, 0, -1).Format(time.DateOnly)
	for _, c := range []store.LLMCall{
		{Time: now, Day: today, Task: "chat", Provider: "default", Model: "gpt-4o-mini", InputTokens: 12000, OutputTokens: 800, CostUSD: 0.30},
		{Time: now, Day: today, Task: "triage", Provider: "default", Model: "gpt-4o-mini", Status: 429, Error: "rate limited"},
		{Time: now, Day: yesterday, Task: "briefing", Provider: "default", Model: "gpt-4o-mini", InputTokens: 100, OutputTokens: 10, CostUSD: 1.25},
		{Time: now, Day: now.AddDate(0, 0, -10).Format(time.DateOnly), Task: "chat", Provider: "default", Model: "gpt-4o-mini", CostUSD: 50},
	} {
		if err := st.RecordLLMCall(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	out, err = cli("usage")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$1.55 in 3 calls (1 failed)", "By task", "briefing", "$1.25", "By model", "default/gpt-4o-mini", "12k tokens in", "Today: $0.30 (no daily budget"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "$50") {
		t.Errorf("a call older than 7 days is counted:\n%s", out)
	}

	out, err = cli("usage", "--days", "1", "--json")
	var rep api.UsageReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("--json: %q %v", out, err)
	}
	if rep.Days != 1 || rep.Total.Calls != 2 || rep.TodayUSD != 0.30 || len(rep.ByTask) != 2 {
		t.Errorf("report %+v", rep)
	}

	for _, args := range [][]string{{"usage", "--days", "0"}, {"usage", "extra"}} {
		var ue usageError
		if _, err := cli(args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
