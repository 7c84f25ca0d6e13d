package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/router"
)

// Bounds of extraction, from the rules.
const (
	maxFactWords   = 18 // "at most ~15 words"; a little slack before refusing
	maxPerCategory = 2  // facts of one kind per pass
	maxBacklog     = 50 // owner messages kept waiting for a pass
	knownInPrompt  = 15 // known facts shown to the model, so it neither repeats nor misses an update
	extractTimeout = 90 * time.Second
)

const extractRules = `You keep a short memory about the owner, drawn from their chat messages. Extract only facts worth telling someone who helps them:
family (people close to them, pets), preferences (likes, dislikes, how they want things), events (plans with a date), notes (lasting facts), recent_context (what matters only for the next days).
Rules:
- Only what the owner says about themselves and their life. Nothing mundane: no greetings, small talk, questions they ask you, or tasks for right now.
- At most 15 words a fact, in the owner's words ("I", "my").
- At most 2 facts per category in one answer. Fewer is better; none is fine.
- Nothing already known (listed below). A fact that changes a known one gives that fact's id in "replaces".
Answer with JSON only: {"facts":[{"text":"...","category":"...","replaces":"m12 or empty"}]}`

const refineRules = `The owner asked you to remember something. Write it as one fact about the owner, at most 15 words, in their own words ("I", "my"), and pick its category: family, preferences, events, notes, or recent_context (only for what matters in the next days).
Answer with JSON only: {"text":"...","category":"..."}`

// Observe counts an owner's chat message towards the next extraction
// pass (every ExtractEvery messages, when a model is configured); the
// pass runs in the background (Run), never in the owner's way.
func (m *Memory) Observe(ctx context.Context, session, text string) {
	if m.o.Model == nil || strings.TrimSpace(text) == "" {
		return
	}
	pending, err := m.repo.addMessage(ctx, session, clip(text, 2000), m.o.Now())
	if err != nil {
		m.log.Warn("memory: could not record a message for extraction", "err", err)
		return
	}
	if pending > maxBacklog {
		// The model has been failing for a while: keep the newest.
		m.o.DB.ExecContext(ctx, `DELETE FROM memory_messages WHERE id NOT IN (SELECT id FROM memory_messages ORDER BY id DESC LIMIT ?)`, maxBacklog)
	}
	if pending >= m.o.ExtractEvery {
		select {
		case m.extract <- struct{}{}:
		default:
		}
	}
}

// extracted is the model's answer.
type extracted struct {
	Facts []struct {
		Text     string `json:"text"`
		Category string `json:"category"`
		Replaces string `json:"replaces"`
	} `json:"facts"`
}

// ExtractResult is what one pass did.
type ExtractResult struct {
	Messages int
	Added    []*Fact
	Skipped  []string // facts the rules refused, with why
	Usage    router.Usage
}

// Extract runs one extraction pass over the waiting messages if there are
// at least ExtractEvery of them (force: any). The messages are consumed
// only when the model answered.
func (m *Memory) Extract(ctx context.Context, force bool) (*ExtractResult, error) {
	if m.o.Model == nil {
		return &ExtractResult{}, nil
	}
	msgs, err := m.repo.pendingMessages(ctx, maxBacklog)
	if err != nil || len(msgs) == 0 || (!force && len(msgs) < m.o.ExtractEvery) {
		return &ExtractResult{}, err
	}
	var said strings.Builder
	var sessions []string
	for _, msg := range msgs {
		fmt.Fprintf(&said, "- %s\n", strings.ReplaceAll(msg.Text, "\n", " "))
		if len(sessions) == 0 || sessions[len(sessions)-1] != msg.Session {
			sessions = append(sessions, msg.Session)
		}
	}
	m.mu.Lock()
	active, err := m.repo.facts(ctx, Active)
	var known []*Fact
	if err == nil {
		known = m.rankLocked(ctx, active, said.String(), knownInPrompt)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	shown := map[int64]bool{}
	var user strings.Builder
	user.WriteString("Known facts:\n")
	if len(known) == 0 {
		user.WriteString("(none)\n")
	}
	for _, f := range known {
		shown[f.ID] = true
		fmt.Fprintf(&user, "[%s] %s\n", f.Ref(), f.Text)
	}
	user.WriteString("\nThe owner's messages:\n" + said.String())
	cctx, cancel := context.WithTimeout(ctx, extractTimeout)
	defer cancel()
	resp, err := m.o.Model.Chat(cctx, router.Request{
		Task: router.TaskReflection, Within: router.TaskChat, MaxTokens: 300,
		Messages: []router.Message{{Role: router.RoleSystem, Content: extractRules}, {Role: router.RoleUser, Content: user.String()}},
	})
	if err != nil {
		return nil, fmt.Errorf("memory: extraction: %w", err)
	}
	res := &ExtractResult{Messages: len(msgs), Usage: resp.Usage}
	var out extracted
	if err := json.Unmarshal([]byte(jsonObject(resp.Content)), &out); err != nil {
		m.log.Warn("memory: extraction answer is not the JSON asked for; the messages are passed over", "err", err)
		out.Facts = nil
	}
	perCat := map[Category]int{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range out.Facts {
		cat, err := ParseCategory(x.Category)
		if err != nil {
			res.Skipped = append(res.Skipped, x.Text+": unknown category")
			continue
		}
		if n := len(strings.Fields(x.Text)); n == 0 || n > maxFactWords {
			res.Skipped = append(res.Skipped, x.Text+": not 1 to 15 words")
			continue
		}
		if perCat[cat] == maxPerCategory {
			res.Skipped = append(res.Skipped, x.Text+": a third fact of one kind in a pass")
			continue
		}
		req := AddRequest{Text: x.Text, Category: cat, Source: SourceChat, SourceRef: strings.Join(sessions, ","), SourceText: said.String()}
		if id, err := ParseRef(x.Replaces); err == nil && shown[id] {
			req.Replaces = id
		}
		r, err := m.addLocked(ctx, req, Active)
		if err != nil {
			res.Skipped = append(res.Skipped, x.Text+": "+err.Error())
			continue
		}
		perCat[cat]++
		if !r.Merged {
			res.Added = append(res.Added, r.Fact)
		}
	}
	if err := markExtracted(ctx, m.o.DB, msgs[len(msgs)-1].ID); err != nil {
		return nil, err
	}
	if len(res.Added) > 0 {
		if err := m.writeFileLocked(ctx); err != nil {
			return nil, err
		}
	}
	m.log.Info("memory: extraction pass", "messages", len(msgs), "added", len(res.Added), "skipped", len(res.Skipped))
	return res, nil
}

// refine lets the model word a "remember …" clause as a fact and pick its
// category; without a model, or when its answer does not do, the clause
// stays as the owner said it, categorised by the rules.
func (m *Memory) refine(ctx context.Context, req *AddRequest) {
	if m.o.Model == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := m.o.Model.Chat(cctx, router.Request{
		Task: router.TaskReflection, Within: router.TaskChat, MaxTokens: 80, Interactive: true,
		Messages: []router.Message{{Role: router.RoleSystem, Content: refineRules}, {Role: router.RoleUser, Content: req.Text}},
	})
	if err != nil {
		m.log.Info("memory: the model could not word the fact; keeping the owner's words", "err", err)
		return
	}
	var out struct {
		Text     string `json:"text"`
		Category string `json:"category"`
	}
	if json.Unmarshal([]byte(jsonObject(resp.Content)), &out) != nil {
		return
	}
	cat, err := ParseCategory(out.Category)
	n := len(strings.Fields(out.Text))
	if err != nil || n == 0 || n > maxFactWords {
		return
	}
	req.Text, req.Category = out.Text, cat
}

// jsonObject is the outermost {…} of a model's answer (models wrap JSON
// in prose or code fences).
func jsonObject(s string) string {
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return ""
	}
	return s[i : j+1]
}
