package config

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/omnibrain/omnibrain/internal/suggest"
)

// Problem is one thing wrong with the configuration.
type Problem struct {
	Line int    `json:"line,omitempty"` // in config.yaml; 0 when it is not on a line of the file
	Text string `json:"text"`
}

// Error is every problem found in the configuration at once, so the owner
// fixes them in one go instead of one per attempt.
type Error struct {
	File     string // config.yaml's path
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File + ":")
	if len(e.Problems) > 1 {
		fmt.Fprintf(&b, " %d problems", len(e.Problems))
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		if p.Line > 0 {
			fmt.Fprintf(&b, "line %d: ", p.Line)
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// newError sorts problems by line, those on no line last, and returns
// nil if there are none.
func newError(file string, problems []Problem) error {
	if len(problems) == 0 {
		return nil
	}
	sort.SliceStable(problems, func(i, j int) bool {
		li, lj := problems[i].Line, problems[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	return &Error{File: file, Problems: problems}
}

// layout is where each key stands in config.yaml: key paths are dotted
// ("telegram.token"), list entries indexed ("llm.providers[0].name").
type layout struct {
	keyLine map[string]int      // a key's line
	values  map[int][]valueAt   // the values starting on a line
	scalar  map[string]string   // a scalar value's text
	keysAt  map[int][]keyAtLine // the keys on a line
}

type valueAt struct{ path string }

type keyAtLine struct{ path, name string }

func newLayout(doc *yaml.Node) *layout {
	l := &layout{keyLine: map[string]int{}, values: map[int][]valueAt{}, scalar: map[string]string{}, keysAt: map[int][]keyAtLine{}}
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		l.walk("", doc.Content[0])
	}
	return l
}

func (l *layout) walk(path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			l.keyLine[p] = k.Line
			l.keysAt[k.Line] = append(l.keysAt[k.Line], keyAtLine{path: p, name: k.Value})
			l.values[v.Line] = append(l.values[v.Line], valueAt{path: p})
			if v.Kind == yaml.ScalarNode {
				l.scalar[p] = v.Value
			}
			l.walk(p, v)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			l.values[v.Line] = append(l.values[v.Line], valueAt{path: p})
			l.walk(p, v)
		}
	}
}

// line is the line of the key at path (0 if it is not in the file).
func (l *layout) line(path string) int {
	if l == nil {
		return 0
	}
	return l.keyLine[path]
}

var (
	typeErr     = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `.*`)? into (.+)$")
	unknownErr  = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	lineErr     = regexp.MustCompile(`^line (\d+): (.*)$`)
	syntaxError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// typeProblems turns yaml.v3's report of values of the wrong type and
// unknown keys into the file's terms: "owner.emails must be a list, e.g.
// [ada@example.com]", `unknown key "tokn" (did you mean "token"?)`.
func (l *layout) typeProblems(te *yaml.TypeError) []Problem {
	var out []Problem
	for _, e := range te.Errors {
		if m := unknownErr.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			out = append(out, Problem{Line: line, Text: l.unknownKey(line, m[2])})
			continue
		}
		if m := typeErr.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			if text := l.wrongType(line, m[2], m[3]); text != "" {
				out = append(out, Problem{Line: line, Text: text})
				continue
			}
		}
		if m := lineErr.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			out = append(out, Problem{Line: line, Text: m[2]})
			continue
		}
		out = append(out, Problem{Text: e})
	}
	return out
}

func (l *layout) unknownKey(line int, name string) string {
	text := fmt.Sprintf("unknown key %q", name)
	parent := ""
	for _, k := range l.keysAt[line] {
		if k.name == name {
			parent = parentPath(k.path)
			break
		}
	}
	if t := typeAt(parent); t != nil && t.Kind() == reflect.Struct {
		if s := suggest.Closest(name, yamlKeys(t)); s != "" {
			text += fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	return text
}

func (l *layout) wrongType(line int, tag, goType string) string {
	// The value that started on this line and should have been goType.
	path := ""
	for _, v := range l.values[line] {
		if t := typeAt(v.path); t != nil && t.String() == goType {
			path = v.path
			break
		}
	}
	if path == "" {
		return ""
	}
	got := ""
	if v, ok := l.scalar[path]; ok && tag != "seq" && tag != "map" {
		got = fmt.Sprintf(" (it is %q)", v)
	}
	t := typeAt(path)
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return fmt.Sprintf("%s must be a duration such as 30s, 5m or 24h%s", path, got)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return fmt.Sprintf("%s must be a list, e.g. %s%s", path, listExample(path), got)
	case t.Kind() == reflect.Slice:
		return fmt.Sprintf("%s must be a list, one entry per line starting with \"- \"", path)
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return fmt.Sprintf("%s must be a section: its keys on the lines below it, indented", path)
	case t.Kind() == reflect.Bool:
		return fmt.Sprintf("%s must be true or false%s", path, got)
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return fmt.Sprintf("%s must be a whole number%s", path, got)
	case t.Kind() == reflect.Float64:
		return fmt.Sprintf("%s must be a number%s", path, got)
	case t.Kind() == reflect.String:
		return fmt.Sprintf("%s must be a single value, not a list or a section", path)
	}
	return ""
}

// listExample shows what a list key takes.
func listExample(path string) string {
	switch {
	case path == "owner.emails":
		return "[ada@example.com]"
	case path == "owner.vips":
		return `[boss@example.com, "@example.com"]`
	case strings.HasSuffix(path, ".providers"):
		return "[default]"
	}
	return "[first, second]"
}

func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// typeAt is the Go type of the configuration value at a key path, or nil.
func typeAt(path string) reflect.Type {
	t := reflect.TypeOf(Config{})
	if path == "" {
		return t
	}
	for _, part := range strings.Split(strings.ReplaceAll(path, "[", ".["), ".") {
		switch {
		case strings.HasPrefix(part, "["):
			if t.Kind() != reflect.Slice {
				return nil
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByKey(t, part)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKeys are the keys a section takes.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// syntaxProblem is a YAML syntax error on the line where the problem is.
// yaml.v3 names the line where the construct it was reading began, and
// counts it from zero: "c: [x" on line 3 is reported on line 2. The
// first prefix of the file that fails to parse ends on the line at fault.
func syntaxProblem(body []byte, err error) Problem {
	m := syntaxError.FindStringSubmatch(err.Error())
	if m == nil {
		return Problem{Text: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	reported, _ := strconv.Atoi(m[1])
	lines := bytes.SplitAfter(body, []byte("\n"))
	line := reported
	for k := max(reported, 1); k <= min(len(lines), reported+50); k++ {
		var n yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[:k], nil), &n) != nil {
			line = k
			break
		}
	}
	text := m[2]
	if line >= 1 && line <= len(lines) {
		src := string(lines[line-1])
		if indent := src[:len(src)-len(strings.TrimLeft(src, " \t"))]; strings.Contains(indent, "\t") {
			text = "a tab in the indentation: YAML indents with spaces only"
		} else if src = strings.TrimSpace(src); src != "" {
			text += fmt.Sprintf(" (the line reads: %s)", clipLine(src, 60))
		}
	}
	return Problem{Line: line, Text: text}
}

func clipLine(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
