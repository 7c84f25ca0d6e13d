package router_test

import (
	"context"
	"testing"

	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/router"
)

// BenchmarkCall is the router's whole cost per call against an instant
// loopback model: request mapping, the SDK, HTTP (and SSE) on loopback,
// response assembly and the llm_calls insert.
func BenchmarkCall(b *testing.B) {
	answer := llm.Turn{Text: "The budget review is on Friday at ten [1].", InputTokens: 120, OutputTokens: 12}
	for _, kind := range kinds {
		for _, stream := range []bool{false, true} {
			b.Run(kind+map[bool]string{false: "/chat", true: "/stream"}[stream], func(b *testing.B) {
				var be backend
				if kind == "anthropic" {
					f := llm.NewAnthropic(b)
					f.Respond(func(llm.Request) llm.Turn { return answer })
					be = backend{kind: kind, url: f.URL}
				} else {
					f := llm.NewOpenAI(b)
					f.Respond(func(llm.Request) llm.Turn { return answer })
					be = backend{kind: kind, url: f.URL}
				}
				h := newHarness(b, be.defaultCfg())
				req := userReq(router.TaskChat, "When is the budget review?")
				req.Tools = []router.ToolSpec{searchSpec}
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if stream {
						_, err = h.r.Stream(context.Background(), req, func(router.Delta) {})
					} else {
						_, err = h.r.Chat(context.Background(), req)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
