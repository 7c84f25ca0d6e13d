package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/api"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/untrusted"
)

// The model repeats the data delimiters it was given (as the morning
// briefing did: "Here is a short summary: / - <<<UNTRUSTED DATA …>>>"):
// neither the briefing in the API nor the one in Telegram shows them.
func TestE2EBriefingShowsNoDataDelimiters(t *testing.T) {
	b := newBrainE2E(t, nil)
	b.mu.Lock()
	b.other = func(r fakellm.Request) (fakellm.Turn, bool) {
		if !strings.Contains(r.System, "briefing") {
			return fakellm.Turn{}, false
		}
		return fakellm.Turn{Text: "Here is a short summary:\n- " + untrusted.Open + ` source="briefing">>>` + "\n- Nothing urgent today.\n" + untrusted.Close + ">>>"}, true
	}
	b.mu.Unlock()
	c, stop := api.NewInProcessClient(b.app.Handler())
	defer stop()
	br, err := c.Briefing(context.Background(), "evening")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(br.Narrative, "Nothing urgent today.") || strings.Contains(br.Narrative, "UNTRUSTED") || strings.Contains(br.Narrative, ">>>") {
		t.Fatalf("narrative %q", br.Narrative)
	}
	b.wait("the briefing in Telegram", func() bool { return b.sentTo("Nothing urgent today.") == 1 })
	for _, m := range b.tg.SentTo(tgOwner.ID) {
		if strings.Contains(m.Text, "UNTRUSTED") {
			t.Errorf("Telegram shows a delimiter: %q", m.Text)
		}
	}
}
