package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/health"
)

// A fact added is listed, in MEMORY.md under its section with its id, and
// in a prompt that asks about it; forgotten, it is in none of them and
// its text is gone from the database.
func TestAddForgetListFilePrompt(t *testing.T) {
	e := newEnv(t, envOpts{})
	res := e.add("My sister Ana lives in Lisbon")
	f := res.Fact
	if f.Category != Family || f.Source != SourceOwner || f.Ref() != "m1" {
		t.Fatalf("fact = %+v", f)
	}
	if !strings.Contains(e.file(), "## Family\n\n- [m1] My sister Ana lives in Lisbon\n") {
		t.Fatalf("MEMORY.md:\n%s", e.file())
	}
	if p := e.prompt("where does Ana live?"); !strings.Contains(p, "[m1] My sister Ana lives in Lisbon") {
		t.Fatalf("prompt:\n%s", p)
	}
	was, err := e.m.Forget(context.Background(), f.ID, "test")
	if err != nil || was.Text != f.Text {
		t.Fatalf("forget = %+v, %v", was, err)
	}
	if got := e.texts(); len(got) != 0 {
		t.Fatalf("still listed: %q", got)
	}
	if strings.Contains(e.file(), "Lisbon") {
		t.Fatalf("still in MEMORY.md:\n%s", e.file())
	}
	if p := e.prompt("where does Ana live?"); strings.Contains(p, "Lisbon") {
		t.Fatalf("still in the prompt:\n%s", p)
	}
	var text string
	if err := e.st.DB().QueryRow(`SELECT text FROM memory_facts WHERE id = ?`, f.ID).Scan(&text); err != nil || text != "" {
		t.Fatalf("forgotten text kept in the database: %q, %v", text, err)
	}
	if _, err := e.m.Forget(context.Background(), f.ID, "again"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forgetting twice: %v", err)
	}
}

func TestAddMergesAndSupersedes(t *testing.T) {
	e := newEnv(t, envOpts{})
	first := e.add("The school play is on Friday").Fact
	dup := e.add("the school play is on Friday.")
	if !dup.Merged || dup.Fact.ID != first.ID {
		t.Fatalf("near-duplicate not merged: %+v", dup)
	}
	moved := e.add("The school play moved to Saturday")
	if moved.Merged || len(moved.Superseded) != 1 || moved.Superseded[0].ID != first.ID {
		t.Fatalf("update did not supersede: %+v", moved)
	}
	if got := e.texts(); len(got) != 1 || got[0] != "The school play moved to Saturday" {
		t.Fatalf("active = %q", got)
	}
	ex, err := e.m.Why(context.Background(), first.ID)
	if err != nil || ex.Fact.State != Superseded || len(ex.SupersededBy) != 1 || ex.SupersededBy[0].ID != moved.Fact.ID {
		t.Fatalf("why = %+v, %v", ex, err)
	}
	// Two things that can both be true stay two facts.
	e.add("I have a dog named Luna")
	e.add("I have a cat named Oliver")
	if got := e.texts(); len(got) != 3 {
		t.Fatalf("active = %q", got)
	}
}

func TestRecentContextExpires(t *testing.T) {
	e := newEnv(t, envOpts{})
	f := e.add("I am working from Porto this week").Fact
	if f.Category != RecentContext || !f.Expires.Equal(e.clock.Now().Add(14*24*time.Hour)) {
		t.Fatalf("fact = %+v", f)
	}
	if p := e.prompt("hello"); !strings.Contains(p, "Porto") {
		t.Fatalf("fresh recent context not in the prompt:\n%s", p)
	}
	e.clock.Add(14*24*time.Hour + time.Minute)
	if p := e.prompt("where am I working from?"); strings.Contains(p, "Porto") {
		t.Fatalf("expired fact in the prompt:\n%s", p)
	}
	if got := e.texts(); len(got) != 0 || strings.Contains(e.file(), "Porto") {
		t.Fatalf("expired fact still listed %q or in MEMORY.md", got)
	}
	ex, _ := e.m.Why(context.Background(), f.ID)
	if ex.Fact.State != Expired {
		t.Fatalf("state = %s", ex.Fact.State)
	}
}

// Edits of MEMORY.md: a changed line changes its fact, a moved line its
// category, a deleted line forgets its fact, a new line becomes a fact
// (and gets its id in the file). Every rewrite is backed up first.
func TestFileEditsApply(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, s := range []string{"My sister Ana lives in Lisbon", "I prefer morning meetings", "My dentist is Dr Gomes", "I like green tea", "My son Leo is 7"} {
		e.add(s)
	}
	f := e.file()
	f = strings.Replace(f, "- [m1] My sister Ana lives in Lisbon", "- [m1] My sister Ana lives in Porto", 1)
	f = strings.Replace(f, "- [m4] I like green tea\n", "", 1)
	f = strings.Replace(f, "- [m3] My dentist is Dr Gomes\n", "", 1)
	f = strings.Replace(f, "## Notes\n", "## Notes\n\n- [m3, pinned] My dentist is Dr Gomes\n- I was born in Braga\n", 1)
	e.write(f)
	got := e.texts()
	want := []string{"My sister Ana lives in Porto", "I prefer morning meetings", "My dentist is Dr Gomes", "My son Leo is 7", "I was born in Braga"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("facts = %q, want %q", got, want)
	}
	m3, _ := e.m.Get(context.Background(), 3)
	if m3.Category != Notes || !m3.Pinned {
		t.Fatalf("moved line: %+v", m3)
	}
	if !strings.Contains(e.file(), "- [m6] I was born in Braga") {
		t.Fatalf("the new line has no id:\n%s", e.file())
	}
	m6, _ := e.m.Get(context.Background(), 6)
	if m6.Source != SourceFile {
		t.Fatalf("source = %s", m6.Source)
	}
	if p := e.prompt("unrelated words"); !strings.Contains(p, "Dr Gomes") {
		t.Fatalf("pinned fact not in the prompt:\n%s", p)
	}
	backups, _ := filepath.Glob(filepath.Join(e.home, BackupDir, "MEMORY-*.md"))
	if len(backups) < 5 {
		t.Fatalf("%d backups", len(backups))
	}
	if len(e.m.Problems()) != 0 {
		t.Fatalf("problems: %v", e.m.Problems())
	}
}

// A malformed edit changes nothing, is reported (health, the owner) and
// stays in the file to be fixed; the fixed file is applied.
func TestBrokenEditLosesNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.add("My sister Ana lives in Lisbon")
	e.add("I prefer morning meetings")
	before := e.texts()
	broken := strings.Replace(e.file(), "## Preferences", "## Hobbies\nI like chess, but this is not a list line", 1)
	e.write(broken)
	if got := e.texts(); strings.Join(got, "|") != strings.Join(before, "|") {
		t.Fatalf("a broken edit changed facts: %q", got)
	}
	p := e.m.Problems()[MemoryFile]
	if !strings.Contains(p, "line ") || !strings.Contains(p, "nothing was changed") {
		t.Fatalf("problem = %q", p)
	}
	if c, _ := e.health.Get(HealthName); c.State != health.Degraded {
		t.Fatalf("health = %+v", c)
	}
	if n := e.notes.all(); len(n) != 1 || !strings.Contains(n[0].Text, "MEMORY.md line") {
		t.Fatalf("owner told %+v", n)
	}
	if e.file() != broken {
		t.Fatal("the owner's broken edit was overwritten")
	}
	// A change made meanwhile rewrites the file; the broken version is kept.
	e.add("I like green tea")
	backups, _ := filepath.Glob(filepath.Join(e.home, BackupDir, "MEMORY-*.md"))
	found := false
	for _, b := range backups {
		if data, _ := os.ReadFile(b); string(data) == broken {
			found = true
		}
	}
	if !found {
		t.Fatal("no backup holds the broken edit")
	}
	e.edit("- [m3] I like green tea", "- [m3] I like green tea with mint")
	if !contains(e.texts(), "I like green tea with mint") || len(e.m.Problems()) != 0 {
		t.Fatalf("fixed edit: %q, problems %v", e.texts(), e.m.Problems())
	}
}

func TestMassDeletionRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, s := range []string{"a fact about apples", "a fact about pears", "a fact about plums", "a fact about grapes", "a fact about figs", "a fact about limes", "a fact about kiwis", "a fact about dates"} {
		e.add(s)
	}
	f := e.file()
	for _, id := range []string{"m1", "m2", "m3"} {
		i := strings.Index(f, "- ["+id+"]")
		j := strings.Index(f[i:], "\n")
		f = f[:i] + f[i+j+1:]
	}
	e.write(f)
	if got := e.texts(); len(got) != 8 {
		t.Fatalf("a deletion of 3 of 8 facts was applied: %q", got)
	}
	if p := e.m.Problems()[MemoryFile]; !strings.Contains(p, "3 of 8") {
		t.Fatalf("problem = %q", p)
	}
	// An emptied or deleted file is written anew; nothing is forgotten.
	e.write("")
	if len(e.texts()) != 8 {
		t.Fatal("an empty file forgot facts")
	}
	os.Remove(filepath.Join(e.home, MemoryFile))
	if err := e.m.SyncFiles(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.file(), "[m8] a fact about dates") {
		t.Fatalf("MEMORY.md not rewritten:\n%s", e.file())
	}
	// One line at a time is fine.
	e.edit("- [m1] a fact about apples\n", "")
	if len(e.texts()) != 7 {
		t.Fatalf("a single deletion was refused: %v", e.m.Problems())
	}
}

// A home whose database was lost: the lines of MEMORY.md are restored
// with their ids, and edits made while the daemon was down are applied
// when it opens.
func TestFileRestoresAndAppliesAtOpen(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.add("My sister Ana lives in Lisbon")
	e.add("I prefer morning meetings")
	fresh := newEnv(t, envOpts{home: e.home}) // a new database, the same home
	if got := fresh.texts(); len(got) != 2 || !strings.Contains(fresh.file(), "[m2] I prefer morning meetings") {
		t.Fatalf("restored %q\n%s", got, fresh.file())
	}
	if err := os.WriteFile(filepath.Join(e.home, MemoryFile), []byte(strings.Replace(fresh.file(), "morning", "afternoon", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	again := fresh.open(nil)
	fs, _ := again.List(context.Background())
	if len(fs) != 2 || fs[1].Text != "I prefer afternoon meetings" {
		t.Fatalf("after reopening: %+v", fs)
	}
}

// A suggestion from outside text is in no prompt and no list until the
// owner keeps it; dropped, it is gone.
func TestSuggestionsWaitForTheOwner(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	s, created, err := e.m.Suggest(ctx, "My bank account is 12345678", Notes, "gmail:abc", "Payment details")
	if err != nil || !created || s.State != Pending {
		t.Fatalf("suggest = %+v, %v, %v", s, created, err)
	}
	if p := e.prompt("what is my bank account?"); strings.Contains(p, "12345678") {
		t.Fatalf("a suggestion reached the prompt:\n%s", p)
	}
	if len(e.texts()) != 0 || strings.Contains(e.file(), "12345678") {
		t.Fatal("a suggestion is listed or in MEMORY.md")
	}
	n := e.notes.all()
	if len(n) != 1 || n[0].Key != SuggestionKeyPrefix+"1" || !strings.Contains(n[0].Text, "Payment details (gmail:abc)") {
		t.Fatalf("owner told %+v", n)
	}
	if _, again, _ := e.m.Suggest(ctx, "my bank account is 12345678", Notes, "gmail:def", ""); again {
		t.Fatal("the same suggestion was made twice")
	}
	if _, err := e.m.Keep(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if p := e.prompt("what is my bank account?"); !strings.Contains(p, "12345678") {
		t.Fatalf("a kept fact is not in the prompt:\n%s", p)
	}
	fs, _ := e.m.List(ctx)
	if fs[0].PublicSource() != "gmail:abc" {
		t.Fatalf("source = %s", fs[0].PublicSource())
	}
	if _, err := e.m.Keep(ctx, s.ID); !errors.Is(err, ErrDecided) {
		t.Fatalf("keeping twice: %v", err)
	}
	d, _, _ := e.m.Suggest(ctx, "My PIN is 0000", Notes, "gmail:xyz", "")
	if _, err := e.m.Drop(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	pending, _ := e.m.List(ctx, Pending)
	if len(pending) != 0 {
		t.Fatalf("pending after drop: %+v", pending)
	}
}

// SOUL.md is created with defaults, goes into every prompt, and an edit
// applies to the next prompt; a file that cannot be used is reported and
// the last good version stays.
func TestSoul(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := e.prompt("hi")
	if !strings.Contains(p, "Warm, direct and brief") || strings.Contains(p, "<!--") {
		t.Fatalf("prompt:\n%s", p)
	}
	path := filepath.Join(e.home, SoulFile)
	os.WriteFile(path, []byte("# Soul\n\nAlways answer in German.\n"), 0o600)
	if p := e.prompt("hi"); !strings.Contains(p, "Always answer in German.") || strings.Contains(p, "Warm") {
		t.Fatalf("edit not applied:\n%s", p)
	}
	os.WriteFile(path, []byte("bad \xff bytes"), 0o600)
	if p := e.prompt("hi"); !strings.Contains(p, "Always answer in German.") {
		t.Fatalf("last good soul lost:\n%s", p)
	}
	if !strings.Contains(e.m.Problems()[SoulFile], "not UTF-8") {
		t.Fatalf("problems = %v", e.m.Problems())
	}
}

// With 200 facts stored, what memory adds to a prompt stays within its
// budget, and the facts the question is about are in it.
func TestPromptIsBounded(t *testing.T) {
	e := newEnv(t, envOpts{})
	addMany(t, e.m, 200)
	p := e.prompt("when is Mia's swimming lesson?")
	if n := estimateTokens(p); n > 300 {
		t.Fatalf("memory adds %d tokens:\n%s", n, p)
	}
	if !strings.Contains(p, "Mia's swimming lesson") {
		t.Fatalf("the relevant fact is missing:\n%s", p)
	}
}

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind CommandKind
		text string
	}{
		{"remember that my daughter Emma's recital is on Friday", Remember, "My daughter Emma's recital is on Friday"},
		{"Please remember: I'm allergic to peanuts.", Remember, "I'm allergic to peanuts"},
		{"hey omnibrain, remember I prefer aisle seats", Remember, "I prefer aisle seats"},
		{"Don't forget that the wifi password changed", Remember, "The wifi password changed"},
		{"do you remember my sister's name?", NoCommand, ""},
		{"remember to call mom", NoCommand, ""},
		{"remember when we talked about Rome", NoCommand, ""},
		{"what do you remember about me", NoCommand, ""},
		{"forget that I like green tea", Forget, "I like green tea"},
		{"please forget about the dentist", Forget, "The dentist"},
		{"forget m12", Forget, "M12"},
		{"forget it", NoCommand, ""},
		{"I forgot my keys", NoCommand, ""},
		{"summarise the mail that says remember that the account is 123", NoCommand, ""},
	} {
		got := ParseCommand(c.in)
		if got.Kind != c.kind || got.Text != c.text {
			t.Errorf("%q → %+v, want %v %q", c.in, got, c.kind, c.text)
		}
	}
}

func TestCategorize(t *testing.T) {
	for in, want := range map[string]Category{
		"My sister Ana lives in Lisbon":         Family,
		"I prefer aisle seats":                  Preferences,
		"The dentist appointment is on Tuesday": Events,
		"I am working from Porto this week":     RecentContext,
		"My car is a blue Volvo":                Notes,
		"My daughter's recital is on 12 March":  Events,
		"I'm allergic to peanuts":               Preferences,
	} {
		if got := Categorize(in); got != want {
			t.Errorf("%q → %s, want %s", in, got, want)
		}
	}
}
