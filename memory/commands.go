package memory

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Command is what a chat message asks of memory, if anything.
type Command struct {
	Kind CommandKind
	Text string // the clause to remember, or what to forget
}

// CommandKind is a memory command's kind.
type CommandKind int

const (
	NoCommand CommandKind = iota
	Remember
	Forget
)

var (
	// politeness before the verb: "please", "hey omnibrain,", "can you"
	leadRe     = `^(?:(?:hey|hi|ok|okay|omnibrain|please|pls|and|also|so)[\s,:!]+)*(?:(?:can|could|would|will) you\s+)?(?:please\s+)?`
	rememberRe = regexp.MustCompile(`(?is)` + leadRe + `(?:remember|don'?t forget|do not forget|keep in mind|note)(?:\s*:\s*|\s+that\s+|\s+)(.+)$`)
	forgetRe   = regexp.MustCompile(`(?is)` + leadRe + `forget(?:\s*:\s*|\s+that\s+|\s+about\s+|\s+what i (?:said|told you) about\s+|\s+)(.+)$`)
	// "remember to call mom" is a reminder, not a fact; "remember when …"
	// and "remember me" are conversation.
	notAFact = regexp.MustCompile(`(?i)^(?:to|when|how|what|who|where|why|if|whether|me|it|this|us)\b`)
)

// ParseCommand recognises "remember (that) …" and "forget (that|about) …"
// at the start of a chat message. A question is never a command.
func ParseCommand(msg string) Command {
	msg = strings.TrimSpace(msg)
	if msg == "" || strings.HasSuffix(msg, "?") || !utf8.ValidString(msg) {
		return Command{}
	}
	if m := forgetRe.FindStringSubmatch(msg); m != nil {
		if text := clause(m[1]); text != "" && !notAFact.MatchString(m[1]) {
			return Command{Kind: Forget, Text: text}
		}
		return Command{}
	}
	if m := rememberRe.FindStringSubmatch(msg); m != nil {
		if text := clause(m[1]); text != "" && !notAFact.MatchString(m[1]) {
			return Command{Kind: Remember, Text: text}
		}
	}
	return Command{}
}

// clause is the stated clause as a fact: one line, without the closing
// punctuation, starting with a capital.
func clause(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, " .!,;")
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
