package fakegoogle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

// Discovery holds the Gmail v1 and Calendar v3 discovery documents, to
// check that what a client sends (paths, parameters, body fields) and what
// the fake answers exists in the real API.
type Discovery struct {
	docs    map[string]*discoveryDoc // "gmail", "calendar"
	methods []discoveryMethod
}

type discoveryDoc struct {
	ServicePath string                     `json:"servicePath"`
	Parameters  map[string]discoveryParam  `json:"parameters"`
	Schemas     map[string]discoverySchema `json:"schemas"`
	Resources   map[string]discoveryRes    `json:"resources"`
}

type discoveryRes struct {
	Methods   map[string]discoveryMethodDoc `json:"methods"`
	Resources map[string]discoveryRes       `json:"resources"`
}

type discoveryMethodDoc struct {
	ID          string                    `json:"id"`
	Path        string                    `json:"path"`
	FlatPath    string                    `json:"flatPath"`
	HTTPMethod  string                    `json:"httpMethod"`
	Parameters  map[string]discoveryParam `json:"parameters"`
	Request     *discoverySchema          `json:"request"`
	MediaUpload *struct {
		Protocols map[string]struct {
			Path string `json:"path"`
		} `json:"protocols"`
	} `json:"mediaUpload"`
}

type discoveryParam struct {
	Type     string   `json:"type"`
	Enum     []string `json:"enum"`
	Repeated bool     `json:"repeated"`
	Location string   `json:"location"`
}

type discoverySchema struct {
	Ref                  string                     `json:"$ref"`
	Type                 string                     `json:"type"`
	Format               string                     `json:"format"`
	Properties           map[string]discoverySchema `json:"properties"`
	Items                *discoverySchema           `json:"items"`
	AdditionalProperties *discoverySchema           `json:"additionalProperties"`
}

type discoveryMethod struct {
	api     string
	id      string
	verb    string
	segs    []string // path template from the server root, split on /
	params  map[string]discoveryParam
	request string // schema name of the body, if any
}

// LoadDiscovery reads the two documents from dir.
func LoadDiscovery(dir string) (*Discovery, error) {
	d := &Discovery{docs: map[string]*discoveryDoc{}}
	for api, file := range map[string]string{"gmail": "gmail-v1-discovery.json", "calendar": "calendar-v3-discovery.json"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		var doc discoveryDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("discovery %s: %w", file, err)
		}
		d.docs[api] = &doc
		d.collect(api, &doc, doc.Resources)
	}
	return d, nil
}

// TestDiscovery loads the documents from ../shared/data/protocol, skipping
// the test when they are absent.
func TestDiscovery(tb testing.TB) *Discovery {
	tb.Helper()
	d, err := LoadDiscovery(testutil.SharedData(tb, "protocol"))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func (d *Discovery) collect(api string, doc *discoveryDoc, res map[string]discoveryRes) {
	for _, r := range res {
		for _, m := range r.Methods {
			add := func(path string) {
				dm := discoveryMethod{api: api, id: m.ID, verb: m.HTTPMethod, segs: strings.Split(strings.TrimPrefix(path, "/"), "/"), params: m.Parameters}
				if m.Request != nil {
					dm.request = m.Request.Ref
				}
				d.methods = append(d.methods, dm)
			}
			add(doc.ServicePath + m.Path)
			if m.MediaUpload != nil {
				for _, p := range m.MediaUpload.Protocols {
					add(p.Path)
				}
			}
		}
		d.collect(api, doc, r.Resources)
	}
}

// match finds the method a request is a call of.
func (d *Discovery) match(verb, path string) *discoveryMethod {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range d.methods {
		m := &d.methods[i]
		if m.verb != verb || !matchSegs(m.segs, segs) {
			continue
		}
		return m
	}
	return nil
}

func matchSegs(tmpl, segs []string) bool {
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{+") {
			return i < len(segs)
		}
		if i >= len(segs) {
			return false
		}
		if strings.HasPrefix(t, "{") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if t != segs[i] {
			return false
		}
	}
	return len(tmpl) == len(segs)
}

// Problems lists what in reqs the discovery documents do not know: a
// path, a query parameter, an enum value, a body field or a field type.
// Requests to the OAuth endpoints are not API calls and are skipped.
func (d *Discovery) Problems(reqs []Request) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, r := range reqs {
		if r.Path == "/token" || r.Path == "/o/oauth2/auth" {
			continue
		}
		m := d.match(r.Method, r.Path)
		if m == nil {
			add(fmt.Sprintf("%s %s: no such method in the discovery documents", r.Method, r.Path))
			continue
		}
		doc := d.docs[m.api]
		for name, vals := range r.Query {
			p, ok := m.params[name]
			if !ok {
				p, ok = doc.Parameters[name]
			}
			if !ok {
				add(fmt.Sprintf("%s (%s): unknown parameter %q", m.id, r.Path, name))
				continue
			}
			if len(vals) > 1 && !p.Repeated {
				add(fmt.Sprintf("%s: parameter %q is not repeated but was sent %d times", m.id, name, len(vals)))
			}
			for _, v := range vals {
				if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
					add(fmt.Sprintf("%s: parameter %s=%q not in %v", m.id, name, v, p.Enum))
				}
			}
		}
		if len(r.Body) > 0 && m.request != "" {
			var v any
			if err := json.Unmarshal(r.Body, &v); err != nil {
				add(fmt.Sprintf("%s: body is not JSON: %v", m.id, err))
				continue
			}
			for _, p := range d.Validate(m.api, m.request, v) {
				add(fmt.Sprintf("%s request: %s", m.id, p))
			}
		}
	}
	sort.Strings(out)
	return out
}

// CheckAtEnd checks, when the test ends, every request s received against
// the discovery documents in ../shared/data/protocol. Without the shared
// data it logs that and checks nothing (TestDiscovery-based tests skip).
func CheckAtEnd(tb testing.TB, s *Server) {
	tb.Helper()
	dir, err := protocolDir()
	if err != nil {
		tb.Logf("discovery check not run: %v", err)
		return
	}
	d, err := LoadDiscovery(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Check(tb, s.Requests()) })
}

// protocolDir finds ../shared/data/protocol next to the module root.
func protocolDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared", "data", "protocol")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("shared protocol documents absent: %w", err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test directory")
		}
		dir = parent
	}
}

// Methods lists the discovery ids of the methods reqs called, sorted
// (OAuth requests and unknown paths left out).
func (d *Discovery) Methods(reqs []Request) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range reqs {
		if m := d.match(r.Method, r.Path); m != nil && !seen[m.id] {
			seen[m.id] = true
			out = append(out, m.id)
		}
	}
	sort.Strings(out)
	return out
}

// Check fails the test for every problem Problems finds.
func (d *Discovery) Check(tb testing.TB, reqs []Request) {
	tb.Helper()
	if len(reqs) == 0 {
		tb.Error("discovery check: no requests recorded")
	}
	for _, p := range d.Problems(reqs) {
		tb.Errorf("discovery: %s", p)
	}
}

// Validate checks a decoded JSON value against a schema of the api
// ("gmail" or "calendar"): unknown fields, and JSON types as the document
// declares them (int64/uint64 as strings, int32 as numbers).
func (d *Discovery) Validate(api, schema string, v any) []string {
	doc := d.docs[api]
	if doc == nil {
		return []string{"unknown api " + api}
	}
	var out []string
	d.validate(doc, discoverySchema{Ref: schema}, v, schema, &out, 0)
	return out
}

func (d *Discovery) validate(doc *discoveryDoc, s discoverySchema, v any, at string, out *[]string, depth int) {
	if depth > 30 {
		return
	}
	if s.Ref != "" {
		ref, ok := doc.Schemas[s.Ref]
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: unknown schema %s", at, s.Ref))
			return
		}
		s = ref
	}
	bad := func(want string) {
		*out = append(*out, fmt.Sprintf("%s: want %s (%s %s), got %T", at, want, s.Type, s.Format, v))
	}
	switch s.Type {
	case "string":
		if _, ok := v.(string); !ok {
			bad("a JSON string")
		}
	case "integer", "number":
		if _, ok := v.(float64); !ok {
			bad("a JSON number")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("a JSON boolean")
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			bad("a JSON array")
			return
		}
		if s.Items != nil {
			for i, e := range arr {
				d.validate(doc, *s.Items, e, fmt.Sprintf("%s[%d]", at, i), out, depth+1)
			}
		}
	case "object", "":
		obj, ok := v.(map[string]any)
		if !ok {
			bad("a JSON object")
			return
		}
		for k, e := range obj {
			if p, ok := s.Properties[k]; ok {
				d.validate(doc, p, e, at+"."+k, out, depth+1)
			} else if s.AdditionalProperties != nil {
				d.validate(doc, *s.AdditionalProperties, e, at+"."+k, out, depth+1)
			} else if s.Properties != nil || s.Type == "" {
				*out = append(*out, fmt.Sprintf("%s: unknown field %q", at, k))
			}
		}
	}
}
