package memory

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/omnibrain/omnibrain/agent"
)

// promptHeader introduces the facts in the system prompt.
const promptHeader = "What the owner told you about themselves (their words; cite a fact as [m12] when you use it):\n"

// soulHeader introduces SOUL.md.
const soulHeader = "Your personality and the owner's standing instructions (SOUL.md):\n"

// maxRecent is how much recent context goes into a prompt unasked.
const maxRecent = 3

// PromptMemory is what memory adds to a system prompt (agent.MemorySource):
// SOUL.md, the pinned facts, the facts that match query best and the
// newest recent context, within PromptTokens. Suggestions never.
func (m *Memory) PromptMemory(ctx context.Context, query string) string {
	m.mu.Lock()
	if err := m.expireLocked(ctx); err != nil {
		m.log.Warn("memory: expire", "err", err)
	}
	m.loadSoulLocked() // cheap when unchanged: an edit applies to the next message
	soul := m.soul
	facts, err := m.repo.facts(ctx, Active)
	if err != nil {
		m.log.Warn("memory: facts for the prompt", "err", err)
	}
	picked := m.rankLocked(ctx, facts, query, 0)
	m.mu.Unlock()
	budget := m.o.PromptTokens
	var b strings.Builder
	if soul != "" {
		// SOUL.md takes at most half the budget; the rest is for facts.
		s := clipTokens(soul, budget/2)
		b.WriteString(soulHeader + s + "\n")
	}
	used := agent.EstimateTokens(b.String()) + agent.EstimateTokens(promptHeader)
	var lines []string
	for _, f := range picked {
		l := fmt.Sprintf("- [%s] %s\n", f.Ref(), f.Text)
		c := agent.EstimateTokens(l)
		if used+c > budget {
			continue
		}
		used += c
		lines = append(lines, l)
	}
	if len(lines) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(promptHeader)
		for _, l := range lines {
			b.WriteString(l)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Relevant orders the facts a prompt should see by word overlap alone:
// pinned ones, then those sharing words with query (rarer words count
// more), then the newest recent context. Facts that match nothing and are
// neither pinned nor recent are left out. limit 0: no limit.
func Relevant(facts []*Fact, query string, limit int) []*Fact {
	return relevant(facts, query, nil, limit)
}

// rankLocked is Relevant with the fact index's similarity fused into the
// word overlap ranking (reciprocal rank fusion). The index follows
// memory's changes under m.mu. A failing index leaves word overlap.
func (m *Memory) rankLocked(ctx context.Context, facts []*Fact, query string, limit int) []*Fact {
	similar, err := m.index.rank(ctx, query)
	if err != nil {
		m.log.Warn("memory: similar facts", "err", err)
	}
	return relevant(facts, query, similar, limit)
}

// relevant orders facts as Relevant does; similar (fact ids, most similar
// first) adds facts that share meaning rather than words, and its order
// is fused with the word overlap order.
func relevant(facts []*Fact, query string, similar []int64, limit int) []*Fact {
	q := slices.Sorted(maps.Keys(analyse(query).all))
	df := map[string]int{}
	ts := make([]terms, len(facts))
	for i, f := range facts {
		ts[i] = analyse(f.Text)
		for k := range ts[i].all {
			df[k]++
		}
	}
	idf := map[string]float64{}
	for k, n := range df {
		idf[k] = math.Log(1 + float64(len(facts))/float64(n))
	}
	type cand struct {
		f     *Fact
		score float64
	}
	byID := make(map[int64]*Fact, len(facts))
	var pinned, matched, recent []cand
	for i, f := range facts {
		byID[f.ID] = f
		switch s := score(q, ts[i].all, idf); {
		case f.Pinned:
			pinned = append(pinned, cand{f, s})
		case s > 0:
			matched = append(matched, cand{f, s})
		case f.Category == RecentContext:
			recent = append(recent, cand{f, 0})
		}
	}
	sort.SliceStable(matched, func(i, j int) bool { return matched[i].score > matched[j].score })
	byWords := make([]int64, len(matched))
	for i, c := range matched {
		byWords[i] = c.f.ID
	}
	var bySimilarity []int64
	for _, id := range similar {
		if f := byID[id]; f != nil && !f.Pinned {
			bySimilarity = append(bySimilarity, id)
		}
	}
	inMatched := map[int64]bool{}
	matched = matched[:0]
	for _, id := range fuse(byWords, bySimilarity) {
		inMatched[id] = true
		matched = append(matched, cand{byID[id], 0})
	}
	var rest []cand
	for _, c := range recent {
		if !inMatched[c.f.ID] {
			rest = append(rest, c)
		}
	}
	recent = rest
	sort.SliceStable(recent, func(i, j int) bool { return recent[i].f.Updated.After(recent[j].f.Updated) })
	if len(recent) > maxRecent {
		recent = recent[:maxRecent]
	}
	var out []*Fact
	for _, group := range [][]cand{pinned, matched, recent} {
		for _, c := range group {
			if limit > 0 && len(out) == limit {
				return out
			}
			out = append(out, c.f)
		}
	}
	return out
}

// clipTokens cuts s to about n tokens at a line or word boundary.
func clipTokens(s string, n int) string {
	if agent.EstimateTokens(s) <= n {
		return s
	}
	cut := s
	for agent.EstimateTokens(cut) > n-8 && len(cut) > 0 {
		i := strings.LastIndexAny(cut, "\n ")
		if i <= 0 {
			cut = ""
			break
		}
		cut = cut[:i]
	}
	return cut + " … (the rest of SOUL.md does not fit the prompt)"
}
