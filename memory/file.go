package memory

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// File names in the home directory.
const (
	MemoryFile = "MEMORY.md"
	SoulFile   = "SOUL.md"
	BackupDir  = "memory-backups"
)

// maxFileBytes bounds what is read of MEMORY.md and SOUL.md.
const maxFileBytes = 1 << 20

const memoryHeader = `# Memory

<!-- omnibrain keeps this file in step with what it knows about you, and
reads it back when you save it. Change a line's text, move a line to
another section, delete a line, or add one as "- text" under a section.
Keep each line's [m12] id: it ties the line to its fact. "[m12, pinned]"
(or "[pinned]" on a new line) puts a fact into every prompt. Recent
context expires after a while. A copy is kept in memory-backups/ before
every rewrite. -->
`

// Line is one fact line of MEMORY.md.
type Line struct {
	No       int      // line number, from 1
	ID       int64    // 0: a new fact
	Category Category // the section it stands in
	Text     string
	Pinned   bool
}

// ParseError says where MEMORY.md is malformed.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "MEMORY.md: " + e.Msg
	}
	return fmt.Sprintf("MEMORY.md line %d: %s", e.Line, e.Msg)
}

var (
	itemRe = regexp.MustCompile(`^[-*+]\s+(.*)$`)
	// the marker at the start of a line's text: [m12], [m12, pinned], [pinned]
	markerRe = regexp.MustCompile(`^\[\s*([^\]]*)\]\s*(.*)$`)
)

// ParseMemory reads MEMORY.md. It is strict: anything it cannot read
// for certain (text outside a list, an unknown section, a doubled or
// malformed id) is an error, so a broken edit changes nothing.
func ParseMemory(data []byte) ([]Line, error) {
	if len(data) > maxFileBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("the file is larger than %d bytes", maxFileBytes)}
	}
	if !utf8.Valid(data) {
		return nil, &ParseError{Msg: "the file is not UTF-8 text"}
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &ParseError{Msg: "the file contains a NUL byte"}
	}
	var out []Line
	seen := map[int64]int{}
	var cat Category
	inComment := false
	for i, raw := range strings.Split(string(data), "\n") {
		no := i + 1
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if inComment {
			if strings.Contains(line, "-->") {
				inComment = false
				if rest := strings.TrimSpace(line[strings.Index(line, "-->")+3:]); rest != "" {
					return nil, &ParseError{no, "text after a comment's end"}
				}
			}
			continue
		}
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "<!--"):
			end := strings.Index(line, "-->")
			if end < 0 {
				inComment = true
				continue
			}
			if strings.TrimSpace(line[end+3:]) != "" {
				return nil, &ParseError{no, "text after a comment's end"}
			}
			continue
		case strings.HasPrefix(line, "## "):
			c, err := ParseCategory(strings.TrimSpace(line[3:]))
			if err != nil {
				return nil, &ParseError{no, fmt.Sprintf("unknown section %q (sections: Family, Preferences, Events, Notes, Recent context)", strings.TrimSpace(line[3:]))}
			}
			cat = c
			continue
		case strings.HasPrefix(line, "# "):
			if cat != "" {
				return nil, &ParseError{no, "a title after the first section"}
			}
			continue
		}
		m := itemRe.FindStringSubmatch(line)
		if m == nil {
			return nil, &ParseError{no, `not a fact: facts are lines starting with "- " under a section`}
		}
		if cat == "" {
			return nil, &ParseError{no, "a fact before the first section (## Family, …)"}
		}
		l := Line{No: no, Category: cat, Text: m[1]}
		if mk := markerRe.FindStringSubmatch(m[1]); mk != nil {
			id, pinned, err := parseMarker(mk[1])
			if err != nil {
				return nil, &ParseError{no, err.Error()}
			}
			l.ID, l.Pinned, l.Text = id, pinned, mk[2]
		}
		text, err := cleanText(l.Text)
		if err != nil {
			return nil, &ParseError{no, strings.TrimPrefix(err.Error(), "memory: ")}
		}
		l.Text = text
		if l.ID != 0 {
			if prev, dup := seen[l.ID]; dup {
				return nil, &ParseError{no, fmt.Sprintf("%s is also on line %d: each fact once", Ref(l.ID), prev)}
			}
			seen[l.ID] = no
		}
		out = append(out, l)
	}
	if inComment {
		return nil, &ParseError{Msg: "a comment (<!--) is never closed"}
	}
	return out, nil
}

// parseMarker reads the inside of "[m12, pinned]".
func parseMarker(s string) (id int64, pinned bool, err error) {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.ToLower(part))
		switch {
		case part == "pinned":
			pinned = true
		case strings.HasPrefix(part, "m") && id == 0:
			n, perr := strconv.ParseInt(part[1:], 10, 64)
			if perr != nil || n <= 0 {
				return 0, false, fmt.Errorf("%q is not a fact id (like m12)", part)
			}
			id = n
		default:
			return 0, false, fmt.Errorf("[%s]: want [m12], [m12, pinned] or [pinned]", s)
		}
	}
	return id, pinned, nil
}

// RenderMemory writes the active facts as MEMORY.md, grouped by category
// in a fixed order, oldest first in each.
func RenderMemory(facts []*Fact) []byte {
	by := map[Category][]*Fact{}
	for _, f := range facts {
		by[f.Category] = append(by[f.Category], f)
	}
	var b strings.Builder
	b.WriteString(memoryHeader)
	for _, c := range Categories {
		fmt.Fprintf(&b, "\n## %s\n", c.Title())
		fs := by[c]
		sort.Slice(fs, func(i, j int) bool { return fs[i].ID < fs[j].ID })
		if len(fs) > 0 {
			b.WriteString("\n")
		}
		for _, f := range fs {
			pin := ""
			if f.Pinned {
				pin = ", pinned"
			}
			fmt.Fprintf(&b, "- [%s%s] %s\n", f.Ref(), pin, f.Text)
		}
	}
	return []byte(b.String())
}

// defaultSoul is SOUL.md on first use.
const defaultSoul = `# Soul

<!-- omnibrain reads this file into every conversation and every task it
runs for you. Edit and save it; the change applies to the next message. -->

## Personality

Warm, direct and brief. Plain words, no flattery, no filler. Say so when
you are not sure, and never pretend to have done something.

## Standing instructions

- Answer in the language I write in.
- Ask before assuming anything about people I mention.
`

// maxBackups is how many copies of each file memory-backups/ keeps.
const maxBackups = 20

// backup copies path into dir as NAME-<time>.md and prunes the oldest
// copies beyond maxBackups. A missing path needs no backup.
func backup(path, dir string, now time.Time) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	base := strings.TrimSuffix(filepath.Base(path), ".md")
	stamp := now.UTC().Format("20060102T150405.000000000Z")
	var name string
	for n := 0; ; n++ { // two rewrites within one clock tick keep two copies
		name = filepath.Join(dir, fmt.Sprintf("%s-%s-%03d.md", base, stamp, n))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", werr
		}
		break
	}
	old, _ := filepath.Glob(filepath.Join(dir, base+"-*.md"))
	sort.Strings(old)
	for len(old) > maxBackups {
		os.Remove(old[0])
		old = old[1:]
	}
	return name, nil
}
