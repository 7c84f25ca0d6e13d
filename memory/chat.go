package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Chatter is the chat memory stands in front of; *agent.Chat provides it.
type Chatter interface {
	Chat(ctx context.Context, sessionID, text string, onEvent func(agent.Event)) (*agent.Answer, error)
	SessionExists(ctx context.Context, id string) (bool, error)
}

// Sessions keeps the turns memory answers itself; *store.Store provides it.
type Sessions interface {
	AppendChatMessages(ctx context.Context, session string, msgs ...store.ChatMessage) error
}

// Chat is the owner's chat with memory in front: "remember (that) …" and
// "forget (that) …" are handled at once, with or without a model, and
// every other message goes on to the agent and counts towards the next
// extraction pass.
type Chat struct {
	inner    Chatter
	m        *Memory
	sessions Sessions
}

// NewChat puts memory in front of inner.
func NewChat(inner Chatter, m *Memory, sessions Sessions) *Chat {
	return &Chat{inner: inner, m: m, sessions: sessions}
}

// SessionExists implements the API's Chatter.
func (c *Chat) SessionExists(ctx context.Context, id string) (bool, error) {
	return c.inner.SessionExists(ctx, id)
}

// Chat answers one message (see agent.Chat.Chat).
func (c *Chat) Chat(ctx context.Context, sessionID, text string, onEvent func(agent.Event)) (*agent.Answer, error) {
	cmd := ParseCommand(text)
	if cmd.Kind == NoCommand {
		ans, err := c.inner.Chat(ctx, sessionID, text, onEvent)
		if err == nil {
			c.m.Observe(ctx, ans.SessionID, strings.TrimSpace(text))
		}
		return ans, err
	}
	if sessionID == "" {
		sessionID = newSessionID()
	}
	var reply string
	var err error
	if cmd.Kind == Remember {
		reply, err = c.remember(ctx, sessionID, text, cmd.Text)
	} else {
		reply, err = c.forget(ctx, cmd.Text)
	}
	if err != nil {
		return nil, err
	}
	ans := &agent.Answer{SessionID: sessionID, Text: reply, Citations: []agent.Citation{}, Stop: agent.StopDone}
	if onEvent != nil {
		onEvent(agent.Event{Type: agent.EventText, Text: reply})
	}
	if err := c.sessions.AppendChatMessages(context.WithoutCancel(ctx), sessionID,
		store.ChatMessage{Role: string(router.RoleUser), Content: strings.TrimSpace(text)},
		store.ChatMessage{Role: string(router.RoleAssistant), Content: reply},
	); err != nil {
		c.m.log.Error("memory: save chat turn", "session", sessionID, "err", err)
	}
	if onEvent != nil {
		onEvent(agent.Event{Type: agent.EventDone, Answer: ans})
	}
	return ans, nil
}

func (c *Chat) remember(ctx context.Context, session, message, clause string) (string, error) {
	req := AddRequest{Text: clause, Source: SourceChat, SourceRef: session, SourceText: message}
	c.m.refine(ctx, &req)
	res, err := c.m.Add(ctx, req)
	if err != nil {
		if errors.Is(err, ctx.Err()) {
			return "", err
		}
		return "I could not remember that: " + strings.TrimPrefix(err.Error(), "memory: "), nil
	}
	f := res.Fact
	var b strings.Builder
	if res.Merged {
		fmt.Fprintf(&b, "I already knew that: [%s] %s", f.Ref(), f.Text)
	} else {
		fmt.Fprintf(&b, "I'll remember that: [%s] %s (%s)", f.Ref(), f.Text, strings.ReplaceAll(string(f.Category), "_", " "))
	}
	for _, old := range res.Superseded {
		fmt.Fprintf(&b, "\nThis replaces [%s] %s", old.Ref(), old.Text)
	}
	b.WriteString("\n(`omnibrain memory` lists what I remember; \"forget that …\" removes a fact.)")
	return b.String(), nil
}

// forget removes the fact the owner named: by id ("forget m12"), or the
// one fact that clearly matches the words. Several close matches are
// listed instead, so the owner can pick.
func (c *Chat) forget(ctx context.Context, what string) (string, error) {
	if id, err := ParseRef(what); err == nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(what)), "m") {
		f, err := c.m.Forget(ctx, id, "forgotten in chat")
		if errors.Is(err, ErrNotFound) {
			return fmt.Sprintf("I have no fact %s to forget.", Ref(id)), nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Forgotten: [%s] %s", f.Ref(), f.Text), nil
	}
	facts, err := c.m.List(ctx)
	if err != nil {
		return "", err
	}
	matches := Matching(facts, what)
	switch {
	case len(matches) == 0:
		return fmt.Sprintf("I do not remember anything like %q. `omnibrain memory` lists what I remember.", what), nil
	case len(matches) > 1:
		var b strings.Builder
		b.WriteString("Several facts match; which one should I forget? Say \"forget m12\" with its id:")
		for _, f := range matches {
			fmt.Fprintf(&b, "\n[%s] %s", f.Ref(), f.Text)
		}
		return b.String(), nil
	}
	f, err := c.m.Forget(ctx, matches[0].ID, "forgotten in chat")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Forgotten: [%s] %s", f.Ref(), f.Text), nil
}

// Matching are the facts that "forget that …" names: the single best
// match when it is clearly ahead, else every close one (at most five).
func Matching(facts []*Fact, what string) []*Fact {
	q := analyse(what).all
	if len(q) == 0 {
		return nil
	}
	type cand struct {
		f *Fact
		s float64
	}
	var cs []cand
	for _, f := range facts {
		t := analyse(f.Text).all
		s := float64(intersect(q, t)) / float64(len(q))
		if s >= 0.5 {
			cs = append(cs, cand{f, s + 0.01*jaccard(q, t)})
		}
	}
	if len(cs) == 0 {
		return nil
	}
	best := 0
	for i, c := range cs {
		if c.s > cs[best].s {
			best = i
		}
	}
	var close []*Fact
	for _, c := range cs {
		if c.s >= cs[best].s-0.2 {
			close = append(close, c.f)
		}
	}
	if len(close) == 1 {
		return close
	}
	if len(close) > 5 {
		close = close[:5]
	}
	return close
}

func newSessionID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "s_" + hex.EncodeToString(b)
}
