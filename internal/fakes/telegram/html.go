package telegram

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// allowedTags are the tags of Telegram's HTML parse mode.
var allowedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true, "del": true,
	"span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// parseHTML checks text the way Telegram's HTML parse mode does and
// returns the visible text: only the supported tags, properly nested and
// closed; '<', '>' and '&' in text must be escaped; entities are &lt;
// &gt; &amp; &quot; and numeric ones.
func parseHTML(text string) (string, error) {
	var out strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		switch c := text[i]; c {
		case '<':
			end := strings.IndexByte(text[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := text[i+1 : i+end]
			i += end + 1
			if strings.HasPrefix(tag, "/") {
				name := strings.ToLower(strings.TrimSpace(tag[1:]))
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unmatched end tag </%s>", name)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name, _, _ := strings.Cut(tag, " ")
			name = strings.ToLower(name)
			if !allowedTags[name] {
				return "", fmt.Errorf("unsupported start tag %q", name)
			}
			stack = append(stack, name)
		case '>':
			return "", errors.New("unescaped '>' in text")
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 || end > 10 {
				return "", fmt.Errorf("unescaped '&' at byte offset %d", i)
			}
			ent := text[i : i+end+1]
			switch ent {
			case "&lt;":
				out.WriteByte('<')
			case "&gt;":
				out.WriteByte('>')
			case "&amp;":
				out.WriteByte('&')
			case "&quot;":
				out.WriteByte('"')
			default:
				var r rune
				if _, err := fmt.Sscanf(ent, "&#%d;", &r); err != nil {
					if _, err := fmt.Sscanf(ent, "&#x%x;", &r); err != nil {
						return "", fmt.Errorf("unsupported entity %s", ent)
					}
				}
				out.WriteRune(r)
			}
			i += end + 1
		default:
			out.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag <%s>", stack[len(stack)-1])
	}
	return out.String(), nil
}

// visibleText is what the user sees of a message's text.
func visibleText(text, parseMode string) string {
	if parseMode == "HTML" {
		if v, err := parseHTML(text); err == nil {
			return v
		}
	}
	return text
}

// utf16Len counts UTF-16 code units, as Telegram measures text.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
