package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Plugins is the plugins backend: reloading after the CLI changed what
// is added, and plugins' own messages to the owner.
type Plugins interface {
	Reload(ctx context.Context) (*PluginsReloaded, error)
	// Message delivers text from plugin name, which proved itself with
	// key (its per-plugin key, not the API token).
	Message(ctx context.Context, name, key, text string) error
}

// PluginsReloaded is POST /api/v1/plugins/reload.
type PluginsReloaded struct {
	Plugins []string `json:"plugins"`
	Tools   int      `json:"tools"`
	Errors  []string `json:"errors"`
}

// PluginMessage is the body of POST /api/v1/plugins/{name}/messages.
type PluginMessage struct {
	Message string `json:"message"`
}

// Errors a Plugins backend returns for a message.
var (
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
)

// RateLimitedError answers 429 with Retry-After.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited: try again in %s", e.RetryAfter)
}

// pluginMessagePath reports whether r is a plugin's message, which
// carries the plugin's key instead of the API token.
func pluginMessagePath(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/plugins/")
	name, tail, _ := strings.Cut(rest, "/")
	return ok && r.Method == http.MethodPost && name != "" && tail == "messages"
}

func (s *Server) handlePluginsReload(w http.ResponseWriter, r *http.Request) {
	if s.b.Plugins == nil {
		notConfigured(w, "plugins")
		return
	}
	res, err := s.b.Plugins.Reload(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handlePluginMessage(w http.ResponseWriter, r *http.Request) {
	if s.b.Plugins == nil {
		notConfigured(w, "plugin messages")
		return
	}
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var req PluginMessage
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "the body must be JSON: {\"message\": \"...\"}")
		return
	}
	err := s.b.Plugins.Message(r.Context(), r.PathValue("name"), key, req.Message)
	var rl *RateLimitedError
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "queued"})
	case errors.Is(err, ErrUnauthorized):
		s.log.Warn("api: refused a plugin message without its key", "plugin", r.PathValue("name"), "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="omnibrain plugin"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong plugin key (HOME/plugins/NAME/app-key)")
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, "forbidden", err.Error())
	case errors.As(err, &rl):
		w.Header().Set("Retry-After", strconv.Itoa(int((rl.RetryAfter+time.Second-1)/time.Second)))
		writeError(w, http.StatusTooManyRequests, "rate_limited", err.Error())
	default:
		s.fail(w, r, err)
	}
}

// ReloadPlugins asks the daemon to read the added plugins again.
func (c *Client) ReloadPlugins(ctx context.Context) (*PluginsReloaded, error) {
	var out PluginsReloaded
	return &out, c.do(ctx, http.MethodPost, "/api/v1/plugins/reload", struct{}{}, &out)
}
