package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestChatSessions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if ok, err := s.ChatSessionExists(ctx, "s1"); ok || err != nil {
		t.Fatalf("exists before use: %v %v", ok, err)
	}
	for i := range 5 {
		err := s.AppendChatMessages(ctx, "s1",
			ChatMessage{Role: "user", Content: fmt.Sprintf("question %d", i)},
			ChatMessage{Role: "assistant", Content: fmt.Sprintf("answer %d [1]", i), RunID: "run", Citations: json.RawMessage(`[{"n":1}]`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendChatMessages(ctx, "s2", ChatMessage{Role: "user", Content: "other"}); err != nil {
		t.Fatal(err)
	}
	h, err := s.ChatHistory(ctx, "s1", 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 4 || h[0].Content != "question 3" || h[3].Content != "answer 4 [1]" || string(h[3].Citations) != `[{"n":1}]` || string(h[0].Citations) != "[]" {
		t.Fatalf("history = %+v", h)
	}
	sessions, err := s.ChatSessions(ctx, 10)
	if err != nil || len(sessions) != 2 {
		t.Fatalf("sessions = %v, %v", sessions, err)
	}
	for _, ss := range sessions {
		if ss.ID == "s1" && ss.Title != "question 0" {
			t.Fatalf("session title = %q, want the first message", ss.Title)
		}
	}
	if ok, _ := s.ChatSessionExists(ctx, "s1"); !ok {
		t.Fatal("session s1 not found")
	}
	if err := s.AppendChatMessages(ctx, "", ChatMessage{Role: "user", Content: "x"}); err == nil {
		t.Fatal("message without session accepted")
	}
}

func TestThreadOfAndItemsBetween(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	base := time.Date(2024, 5, 14, 9, 0, 0, 0, time.UTC)
	items := []*Item{
		{Source: "mbox", ExternalID: "a", Kind: "email", Thread: "t1", Time: base.Add(2 * time.Hour), Title: "Re: plan"},
		{Source: "mbox", ExternalID: "b", Kind: "email", Thread: "t1", Time: base, Title: "plan"},
		{Source: "mbox", ExternalID: "c", Kind: "email", Thread: "t2", Time: base, Title: "other"},
		{Source: "gmail", ExternalID: "d", Kind: "email", Thread: "t1", Time: base, Title: "same thread id, other source"},
		{Source: "calendar", ExternalID: "e1", Kind: "event", Time: base.Add(time.Hour), Title: "standup"},
		{Source: "calendar", ExternalID: "e2", Kind: "event", Time: base.Add(26 * time.Hour), Title: "tomorrow"},
	}
	if _, err := s.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	th, err := s.ThreadOf(ctx, "mbox", "t1", 10)
	if err != nil || len(th) != 2 || th[0].ExternalID != "b" || th[1].ExternalID != "a" {
		t.Fatalf("thread = %v, %v", th, err)
	}
	day := time.Date(2024, 5, 14, 0, 0, 0, 0, time.UTC)
	evs, err := s.ItemsBetween(ctx, []string{"event"}, day, day.AddDate(0, 0, 1), 10)
	if err != nil || len(evs) != 1 || evs[0].Title != "standup" {
		t.Fatalf("events today = %v, %v", evs, err)
	}
	all, _ := s.ItemsBetween(ctx, []string{"event", "email"}, day, day.AddDate(0, 0, 2), 10)
	if len(all) != 6 {
		t.Fatalf("events+mail over two days = %d, want 6", len(all))
	}
	if anyKind, err := s.ItemsBetween(ctx, nil, day, day.AddDate(0, 0, 1), 10); err != nil || len(anyKind) != 5 {
		t.Fatalf("any kind today = %d, %v; want 5", len(anyKind), err)
	}
}
