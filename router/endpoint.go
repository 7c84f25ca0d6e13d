package router

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// defaultOllamaURL is Ollama's OpenAI-compatible API on its default port.
const defaultOllamaURL = "http://127.0.0.1:11434/v1"

type probeOptions struct {
	url     string
	timeout time.Duration
}

// newEndpoint builds one configured provider. openai and anthropic need a
// model; ollama without one takes the first model the server lists.
func newEndpoint(ctx context.Context, probe probeOptions, name, kind, baseURL, apiKey, model string, hosted http.RoundTripper) (*endpoint, error) {
	ep := &endpoint{name: name, kind: kind, model: model}
	switch kind {
	case "openai":
		ep.baseURL = cmp.Or(baseURL, "https://api.openai.com/v1")
	case "anthropic":
		// The SDK appends /v1/messages; accept a base URL written with /v1.
		ep.baseURL = strings.TrimSuffix(strings.TrimSuffix(cmp.Or(baseURL, "https://api.anthropic.com"), "/"), "/v1")
	case "ollama":
		ep.baseURL = cmp.Or(baseURL, probe.url)
	default:
		return nil, fmt.Errorf("provider %s: unknown type %q (want openai, anthropic or ollama)", name, kind)
	}
	ep.baseURL = strings.TrimSuffix(ep.baseURL, "/")
	ep.local = IsLoopbackURL(ep.baseURL)
	hc := httpClient(ep.local)
	if !ep.local && hosted != nil {
		hc = &http.Client{Transport: hosted}
	}
	if kind == "anthropic" {
		ep.p = newAnthropic(ep.baseURL, apiKey, model, hc)
	} else {
		ep.p = newOpenAI(ep.baseURL, apiKey, model, hc)
	}
	if model != "" {
		return ep, nil
	}
	if kind != "ollama" {
		return nil, fmt.Errorf("provider %s (%s): no model configured (set OMNIBRAIN_LLM_MODEL or llm.providers[].model)", name, kind)
	}
	models, err := listModels(ctx, ep.baseURL, apiKey, probe.timeout)
	if err != nil || len(models) == 0 {
		return nil, fmt.Errorf("provider %s (ollama at %s): no model configured and none found there (set OMNIBRAIN_LLM_MODEL, or `ollama pull llama3.2`): %v", name, ep.baseURL, err)
	}
	ep.model = models[0]
	ep.p = newOpenAI(ep.baseURL, apiKey, ep.model, hc)
	return ep, nil
}

// discoverOllama looks for a local Ollama when no provider is configured.
// It returns the endpoint, or a hint saying why there is none.
func discoverOllama(ctx context.Context, probe probeOptions, model string) (*endpoint, string) {
	models, err := listModels(ctx, probe.url, "", probe.timeout)
	if err != nil {
		return nil, fmt.Sprintf("no provider configured and no Ollama answering at %s", probe.url)
	}
	if model == "" {
		if len(models) == 0 {
			return nil, fmt.Sprintf("Ollama answers at %s but has no model: run `ollama pull llama3.2`", probe.url)
		}
		model = models[0]
	}
	ep, err := newEndpoint(ctx, probe, DefaultProvider, "ollama", probe.url, "", model, nil)
	if err != nil {
		return nil, err.Error()
	}
	return ep, ""
}

// listModels asks an OpenAI-compatible server for its models (GET /models).
func listModels(ctx context.Context, baseURL, apiKey string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := newOpenAI(baseURL, apiKey, "", httpClient(IsLoopbackURL(baseURL)))
	page, err := p.client.Models.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list models at %s: %w", baseURL, err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// IsLoopbackURL reports whether a base URL names this machine: localhost or
// a loopback address. Names that merely resolve to loopback do not count.
func IsLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpClient is a provider's own client. A local provider's client never
// uses a proxy and refuses to connect anywhere but loopback, so a redirect
// or a DNS answer cannot carry a privacy: local request off the machine.
func httpClient(local bool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if local {
		tr.Proxy = nil
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: loopbackOnly}
		tr.DialContext = d.DialContext
	}
	return &http.Client{Transport: tr}
}

// loopbackOnly is a dialer Control that refuses non-loopback addresses.
func loopbackOnly(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("router: a local provider may only connect to loopback, not %s", address)
	}
	return nil
}
