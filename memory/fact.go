// Package memory is what omnibrain knows about its owner: short facts
// the owner stated or confirmed ("remember that …", the extraction of
// chat messages, MEMORY.md), each with its source, the owner's standing
// instructions in SOUL.md, and the bounded part of both that goes into
// every prompt. Text from mail, calendar, GitHub or plugins never becomes
// a fact by itself: a model may only suggest one, and it waits for the
// owner's ✅ Keep.
package memory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Category groups facts the way extraction and MEMORY.md do.
type Category string

const (
	Family        Category = "family"
	Preferences   Category = "preferences"
	Events        Category = "events"
	Notes         Category = "notes"
	RecentContext Category = "recent_context" // expires (14 days by default)
)

// Categories in the order MEMORY.md shows them.
var Categories = []Category{Family, Preferences, Events, Notes, RecentContext}

// ParseCategory accepts a category's name in any case, with a space or a
// hyphen for the underscore ("Recent context").
func ParseCategory(s string) (Category, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	n = strings.NewReplacer(" ", "_", "-", "_").Replace(n)
	for _, c := range Categories {
		if string(c) == n {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: unknown category %q (want family, preferences, events, notes or recent_context)", ErrInvalid, s)
}

// Title is the category's heading in MEMORY.md.
func (c Category) Title() string {
	if c == RecentContext {
		return "Recent context"
	}
	s := string(c)
	return strings.ToUpper(s[:1]) + s[1:]
}

// State is where a fact stands.
type State string

const (
	Active     State = "active"
	Pending    State = "pending"    // suggested from outside text; in no prompt until kept
	Superseded State = "superseded" // a newer fact about the same thing replaced it
	Forgotten  State = "forgotten"  // the owner forgot it; its text is gone
	Expired    State = "expired"    // recent context past its time
	Dropped    State = "dropped"    // a suggestion the owner dropped; its text is gone
)

// Source kinds: where a fact came from.
const (
	SourceChat  = "chat"  // the owner's chat message
	SourceOwner = "owner" // memory add (CLI, API)
	SourceFile  = "file"  // a line the owner added to MEMORY.md
	SourceItem  = "item"  // a mail, event, GitHub item or plugin result (suggestions only)
)

// Fact is one thing omnibrain knows about the owner.
type Fact struct {
	ID           int64
	Text         string
	Category     Category
	State        State
	Source       string // SourceChat, SourceOwner, SourceFile, SourceItem
	SourceRef    string // the chat session, or the item as source:external_id
	SourceText   string // the words it came from (bounded)
	Pinned       bool
	Created      time.Time
	Updated      time.Time
	Expires      time.Time // zero: never
	SupersededBy int64
	Note         string // why its state last changed
}

// Ref is the fact's id as shown to people and models: "m12".
func (f *Fact) Ref() string { return Ref(f.ID) }

// Ref formats a fact id.
func Ref(id int64) string { return "m" + strconv.FormatInt(id, 10) }

// Errors callers tell apart.
var (
	ErrNotFound = errors.New("memory: no such fact")
	ErrInvalid  = errors.New("memory") // bad input: the message says what
)

// ParseRef reads "m12" or "12".
func ParseRef(s string) (int64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "m"), "M")
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %q is not a fact id (like m12)", ErrInvalid, s)
	}
	return id, nil
}

// PublicSource is the contract's source field: chat, owner, file, or the
// item a kept suggestion came from.
func (f *Fact) PublicSource() string {
	if f.Source == SourceItem && f.SourceRef != "" {
		return f.SourceRef
	}
	return f.Source
}

// maxFactRunes bounds a fact's text wherever it comes from.
const maxFactRunes = 400

// cleanText is a fact's text on one line, trimmed and bounded.
func cleanText(s string) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("%w: a fact needs text", ErrInvalid)
	}
	if r := []rune(s); len(r) > maxFactRunes {
		return "", fmt.Errorf("%w: a fact is at most %d characters (this one has %d)", ErrInvalid, maxFactRunes, len(r))
	}
	return s, nil
}
