package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/clip"
)

// Argument limits: what a read tool sends leaves the machine without the
// owner looking, so it is kept short.
const (
	maxReadString = 500     // runes in one string argument of a read call
	maxReadArgs   = 2 << 10 // bytes of a read call's arguments
	maxArgs       = 64 << 10
)

// params keeps the arguments the tool's schema names (nothing else the
// model adds is sent) and checks their size. args is the agent's
// validated, canonical JSON object.
func params(schema json.RawMessage, args json.RawMessage, read bool) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(args, &all); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	props := schemaProps(schema)
	out := map[string]json.RawMessage{}
	size := 0
	for k, v := range all {
		if !props[k] {
			continue
		}
		out[k] = v
		size += len(k) + len(v)
		if read {
			if err := checkReadValue(k, v); err != nil {
				return nil, err
			}
		}
	}
	limit := maxArgs
	if read {
		limit = maxReadArgs
	}
	if size > limit {
		return nil, fmt.Errorf("the arguments are %d bytes; at most %d may be sent — send less", size, limit)
	}
	return out, nil
}

func checkReadValue(name string, v json.RawMessage) error {
	var anyV any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&anyV); err != nil {
		return err
	}
	var walk func(any) error
	walk = func(x any) error {
		switch y := x.(type) {
		case string:
			if n := utf8.RuneCountInString(y); n > maxReadString {
				return fmt.Errorf("argument %q has a %d-character text; a lookup takes at most %d — send a short query", name, n, maxReadString)
			}
		case []any:
			for _, e := range y {
				if err := walk(e); err != nil {
					return err
				}
			}
		case map[string]any:
			for _, e := range y {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(anyV)
}

func schemaProps(schema json.RawMessage) map[string]bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	out := map[string]bool{}
	for k := range s.Properties {
		out[k] = true
	}
	return out
}

// httpCall is one request to a chat-tools endpoint, exactly as it is
// sent (and, for an outgoing tool, as the owner approves it).
type httpCall struct {
	Method   string
	Endpoint string // GET: with the query
	Body     []byte // nil for GET
}

// request builds the contract's request: POST (PUT, PATCH, DELETE) with
// the JSON body {"uid","app_id","tool_name", ...params}; GET with the
// same as query parameters.
func (p *plugin) request(t *OmiTool, ps map[string]json.RawMessage) (httpCall, error) {
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	std := [][2]string{{"uid", p.pin.UID}, {"app_id", p.pin.Name}, {"tool_name", t.Name}}
	if t.Method == http.MethodGet {
		u := *t.url
		q := u.Query()
		for _, kv := range std {
			q.Set(kv[0], kv[1])
		}
		for _, k := range keys {
			var s string
			if json.Unmarshal(ps[k], &s) != nil {
				s = string(ps[k]) // numbers, booleans, arrays: their JSON text
			}
			q.Set(k, s)
		}
		u.RawQuery = q.Encode()
		return httpCall{Method: t.Method, Endpoint: u.String()}, nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range std {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[0])
		v, _ := json.Marshal(kv[1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(ps[k])
	}
	b.WriteByte('}')
	// Compact and HTML-escaped as the gate stores payloads, so the bytes
	// sent are the bytes approved.
	var out bytes.Buffer
	if err := json.Compact(&out, b.Bytes()); err != nil {
		return httpCall{}, err
	}
	return httpCall{Method: t.Method, Endpoint: t.url.String(), Body: escapeHTML(out.Bytes())}, nil
}

func escapeHTML(b []byte) []byte {
	var out bytes.Buffer
	json.HTMLEscape(&out, b)
	return out.Bytes()
}

var (
	// errNotSent marks a call that certainly did not reach the server.
	errNotSent = errors.New("not sent")
	// errTransport marks a call that broke off after it may have arrived.
	errTransport = errors.New("the connection broke off")
)

// send makes one call and returns the answer's result. An answer with
// {"error"} is an error carrying that text; an answer larger than
// MaxResponse, or not the contract's JSON, is an error too. key, if set,
// is sent as Idempotency-Key.
func (p *plugin) send(ctx context.Context, t *OmiTool, c httpCall, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.m.opts.CallTimeout)
	defer cancel()
	var body *bytes.Reader
	if c.Body != nil {
		body = bytes.NewReader(c.Body)
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, c.Method, c.Endpoint, body)
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, err = http.NewRequestWithContext(ctx, c.Method, c.Endpoint, nil)
	}
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w (%v)", p.pin.Name, err, errNotSent)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "omnibrain")
	if t.Auth() && p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := p.m.opts.Client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok && errors.Is(ue.Err, errRedirect) {
			return "", fmt.Errorf("plugin %s: %s %s answered with a redirect, which is not followed", p.pin.Name, c.Method, redactQuery(c.Endpoint))
		}
		if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "dial" {
			return "", fmt.Errorf("plugin %s: %w: %v", p.pin.Name, errNotSent, oe)
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("plugin %s: no answer within %s: %w", p.pin.Name, p.m.opts.CallTimeout, context.DeadlineExceeded)
		}
		return "", fmt.Errorf("plugin %s: %w: %w", p.pin.Name, errTransport, err)
	}
	defer resp.Body.Close()
	raw, over, err := readLimited(resp.Body, MaxResponse)
	if err != nil {
		return "", fmt.Errorf("plugin %s: reading the answer: %w: %w", p.pin.Name, errTransport, err)
	}
	if over {
		return "", fmt.Errorf("plugin %s: the answer is larger than %d bytes", p.pin.Name, MaxResponse)
	}
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return "", fmt.Errorf("plugin %s: HTTP %d, not the expected JSON {\"result\"} or {\"error\"}: %s", p.pin.Name, resp.StatusCode, clip.Text(strings.TrimSpace(string(raw)), 300))
	}
	if msg := jsonText(ans.Error); msg != "" {
		return "", fmt.Errorf("plugin %s: %s", p.pin.Name, msg)
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("plugin %s: HTTP %d", p.pin.Name, resp.StatusCode)
	}
	if len(ans.Result) == 0 {
		return "", fmt.Errorf("plugin %s: the answer has neither result nor error", p.pin.Name)
	}
	return jsonText(ans.Result), nil
}

// jsonText is a JSON string's text, or other JSON as it is; "" for null.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func redactQuery(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	u.RawQuery = ""
	return u.String()
}

// draft is the proposal of a call: the plugin, the endpoint and the
// exact body for a chat-tools call, the arguments for a local one.
func (p *plugin) draft(tool string, ps map[string]json.RawMessage, reason string) (approval.Draft, error) {
	pl := &approval.PluginActionPayload{Plugin: p.pin.Name, Tool: tool}
	title := fmt.Sprintf("Run %s/%s", p.pin.Name, tool)
	if t, ok := p.omiTool(tool); ok {
		c, err := p.request(t, ps)
		if err != nil {
			return approval.Draft{}, err
		}
		pl.Method, pl.Endpoint, pl.Body = c.Method, c.Endpoint, c.Body
		title = fmt.Sprintf("Call %s/%s: %s %s", p.pin.Name, tool, c.Method, redactQuery(c.Endpoint))
	} else {
		args, err := json.Marshal(ps)
		if err != nil {
			return approval.Draft{}, err
		}
		pl.Arguments = args
	}
	return approval.Draft{Kind: approval.KindPluginAction, Title: title, Reason: reason, Payload: pl}, nil
}
