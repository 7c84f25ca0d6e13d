package drafting_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/drafting"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
)

func newRouter(t *testing.T) (*router.Router, *llm.OpenAI) {
	t.Helper()
	f := llm.NewOpenAI(t)
	r, err := router.New(context.Background(), router.Options{
		LLM:       config.LLM{Provider: "openai", BaseURL: f.URL, Model: "gpt-test", APIKey: "sk-test", Timeout: 10 * time.Second},
		OllamaURL: "http://127.0.0.1:1/v1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, f
}

// A redraft goes out under the drafting prompt; the draft reaches the
// model only as delimited data, and only the text changes.
func TestRedraft(t *testing.T) {
	r, f := newRouter(t)
	d := drafting.Drafter{Model: r, OwnerName: "Owen"}
	f.Script(llm.Turn{Text: "\nYes.\n"})
	payload, _ := json.Marshal(approval.EmailPayload{To: []string{"alice@example.org"}, Subject: "Re: Contract", Body: "Hi Alice, yes, I will sign it by Friday."})
	p := &approval.Proposal{Kind: approval.KindReply, Payload: payload}
	got, err := d.Redraft(context.Background(), p, "shorter")
	if err != nil {
		t.Fatal(err)
	}
	e := got.(approval.EmailPayload)
	if e.Body != "Yes." || e.Subject != "Re: Contract" || len(e.To) != 1 || e.To[0] != "alice@example.org" {
		t.Fatalf("redraft changed more than the text: %+v", e)
	}
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].System != drafting.SystemPrompt("Owen") || !strings.HasPrefix(reqs[0].System, "You draft text that the owner, Owen, will send") {
		t.Fatalf("requests %+v", reqs)
	}
	redraft := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if !strings.Contains(redraft, untrusted.Open) || !strings.Contains(redraft, "I will sign it by Friday") || !strings.HasSuffix(redraft, "The owner's instructions: shorter") || !strings.Contains(redraft, "alice@example.org") {
		t.Errorf("redraft request:\n%s", redraft)
	}
	if reqs[0].MaxTokens != 1500 || !strings.Contains(reqs[0].System, drafting.Rules("Owen")) {
		t.Errorf("max tokens %d; system %s", reqs[0].MaxTokens, reqs[0].System)
	}
}

// What cannot be redrafted is refused before any model call; without a
// model the caller is told so.
func TestDrafterRefusals(t *testing.T) {
	r, f := newRouter(t)
	d := drafting.Drafter{Model: r}
	automation := &approval.Proposal{Kind: approval.KindAutomation, Payload: json.RawMessage(`{}`)}
	var bad *approval.BadInputError
	if _, err := d.Redraft(context.Background(), automation, "shorter"); !errors.As(err, &bad) {
		t.Errorf("a proposal without text: %v", err)
	}
	reply := &approval.Proposal{Kind: approval.KindReply, Payload: json.RawMessage(`{"to":["a@example.org"],"subject":"x","body":"y"}`)}
	if _, err := d.Redraft(context.Background(), reply, "  "); !errors.As(err, &bad) {
		t.Errorf("no instructions: %v", err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("%d model calls for refused redrafts", n)
	}
	none := drafting.Drafter{}
	if _, err := none.Redraft(context.Background(), reply, "shorter"); !errors.Is(err, router.ErrNoModel) {
		t.Errorf("redraft without a model: %v", err)
	}
}

func TestLanguage(t *testing.T) {
	for text, want := range map[string]string{
		"Hi Bill, can you please send me the filing for the TW case? Thanks, Ann":                          "English",
		"Hallo Bill, kannst du mir bitte die Unterlagen schicken? Ich brauche sie für die Sitzung. Danke":  "German",
		"Bonjour, pouvez-vous m'envoyer le dossier avant la réunion? Merci et à bientôt, je vous remercie": "French",
		"ok":                  "",
		"Call me re: TW 2pm.": "",
	} {
		if got := drafting.Language(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}
