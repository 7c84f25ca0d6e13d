package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/router"
)

func estimateTokens(s string) int { return agent.EstimateTokens(s) }

// addMany stores n varied facts, one of them "Mia's swimming lesson".
func addMany(t testing.TB, m *Memory, n int) {
	t.Helper()
	people := []string{"Ana", "Leo", "Mia", "Tom", "Eva", "Sam", "Ida", "Max", "Zoe", "Ben"}
	things := []string{"piano lesson", "dentist visit", "football practice", "book club", "yoga class", "chess club", "swimming lesson", "art class", "choir", "tennis match"}
	days := []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
	likes := []string{"green tea", "aisle seats", "Thai food", "early flights", "quiet hotels", "paper books", "dark roast coffee", "window seats", "vegetarian dishes", "long walks"}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		var text string
		switch i % 4 {
		case 0:
			text = fmt.Sprintf("%s's %s is on %s at %d pm", people[i/4%10], things[(i/40)%10], days[i%5], 1+i%9)
		case 1:
			text = fmt.Sprintf("I like %s, number %d on my list", likes[i/4%10], i)
		case 2:
			text = fmt.Sprintf("My colleague %s%d works on project %d", people[i%10], i, i)
		default:
			text = fmt.Sprintf("Note %d: the storage unit code is %d", i, 1000+i)
		}
		if _, err := m.Add(ctx, AddRequest{Text: text, Source: SourceOwner}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Add(ctx, AddRequest{Text: "Mia's swimming lesson is on Saturday mornings", Source: SourceOwner}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPromptTokens200Facts reports the tokens memory adds to a chat
// prompt with 200 facts stored (SOUL.md's defaults included).
func BenchmarkPromptTokens200Facts(b *testing.B) {
	e := newEnv(b, envOpts{})
	addMany(b, e.m, 200)
	questions := []string{"when is Mia's swimming lesson?", "what should I book for my flight?", "hello", "what do you know about me?"}
	tokens := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tokens = 0
		for _, q := range questions {
			tokens = max(tokens, estimateTokens(e.prompt(q)))
		}
	}
	b.ReportMetric(float64(tokens), "max-prompt-tokens")
}

// countingModel is a model that answers extraction with fixed facts and
// counts the tokens it is sent and answers.
type countingModel struct {
	mu       sync.Mutex
	answer   string
	requests []router.Request
	in, out  int
}

func (c *countingModel) Chat(_ context.Context, req router.Request) (*router.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, req)
	in := 0
	for _, m := range req.Messages {
		in += agent.EstimateTokens(m.Content) + 4
	}
	out := agent.EstimateTokens(c.answer)
	c.in += in
	c.out += out
	return &router.Response{Content: c.answer, Usage: router.Usage{InputTokens: in, OutputTokens: out}}, nil
}

func (c *countingModel) last() router.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[len(c.requests)-1]
}

// BenchmarkExtractionTokens reports the tokens one extraction pass over
// five owner messages costs, with 200 facts stored.
func BenchmarkExtractionTokens(b *testing.B) {
	model := &countingModel{answer: `{"facts":[{"text":"My daughter Emma starts ballet on Thursdays","category":"family"},{"text":"I prefer trains to flights","category":"preferences"}]}`}
	e := newEnv(b, envOpts{model: model})
	addMany(b, e.m, 200)
	ctx := context.Background()
	msgs := []string{
		"Can you find the invoice from the garage?",
		"My daughter Emma starts ballet on Thursdays, so I leave at 4 then.",
		"Thanks. Also, I'd rather take the train than fly to Berlin next month.",
		"What's on my calendar tomorrow?",
		"ok great",
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, m := range msgs {
			e.m.Observe(ctx, "s_bench", m)
		}
		if _, err := e.m.Extract(ctx, false); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	model.mu.Lock()
	defer model.mu.Unlock()
	b.ReportMetric(float64(model.in)/float64(len(model.requests)), "input-tokens/pass")
	b.ReportMetric(float64(model.out)/float64(len(model.requests)), "output-tokens/pass")
	if !strings.Contains(model.requests[0].Messages[1].Content, "Emma starts ballet") {
		b.Fatal("the messages were not sent")
	}
}
