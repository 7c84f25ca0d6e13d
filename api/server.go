// Package api is omnibrain's local REST API (/api/v1/…) and the Go client
// that the CLI and the tests share. Like tailscale's LocalAPI it is served
// on a Unix socket (mode 0600) in the home directory and, optionally, on
// loopback TCP where every request must carry the bearer token.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// SocketName is the API's Unix socket inside the home directory.
const SocketName = "omnibrain.sock"

// TokenFileName holds the bearer token for the loopback TCP listener.
const TokenFileName = "api-token"

// MaxBodyBytes bounds a request body (a chat message, an edited payload).
const MaxBodyBytes = 4 << 20

// socketHost is the Host the client sends over the Unix socket.
const socketHost = "omnibrain"

// Backends are what the API serves. A nil backend answers 501 with a
// message that says what is missing, never a crash.
type Backends struct {
	Status   func(ctx context.Context) (*Status, error)
	Search   Searcher
	Importer Importer
	Collect  Collectors
	Chat     Chatter
	Usage    UsageReporter // api/usage.go
	// Proposals and Telegram: api/proposals.go, api/telegram.go.
	Proposals Proposals
	Telegram  TelegramPairer
	// Briefings and Explain: api/briefing.go (the proactive engine).
	Briefings Briefer
	Explain   Explainer
	// Notifications: api/notifications.go (the queue).
	Notifications Notifier
	// Memory: api/memory.go.
	Memory Memory
	// Plugins: api/plugins.go.
	Plugins Plugins
}

// Server routes and guards API requests.
type Server struct {
	log   *slog.Logger
	token string
	b     Backends
	mux   *http.ServeMux
}

// NewServer builds the API. token guards the TCP listener; the Unix socket
// is guarded by its file mode.
func NewServer(log *slog.Logger, token string, b Backends) *Server {
	s := &Server{log: log, token: token, b: b, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /api/v1/status", s.handleStatus)
	s.mux.HandleFunc("GET /api/v1/ping", s.handlePing)
	s.mux.HandleFunc("GET /api/v1/search", s.handleSearch)
	s.mux.HandleFunc("POST /api/v1/import", s.handleImport)
	s.mux.HandleFunc("POST /api/v1/collect", s.handleCollect)
	s.mux.HandleFunc("POST /api/v1/chat", s.handleChat)
	s.mux.HandleFunc("GET /api/v1/usage", s.handleUsage)
	s.mux.HandleFunc("GET /api/v1/proposals", s.handleProposals)
	s.mux.HandleFunc("GET /api/v1/proposals/{id}", s.handleProposal)
	s.mux.HandleFunc("POST /api/v1/proposals/{id}/{action}", s.handleProposalDecision)
	s.mux.HandleFunc("POST /api/v1/telegram/pair", s.handleTelegramPair)
	s.mux.HandleFunc("POST /api/v1/briefings/{kind}", s.handleBriefing)
	s.mux.HandleFunc("GET /api/v1/briefings", s.handleBriefings)
	s.mux.HandleFunc("GET /api/v1/explain", s.handleExplain)
	s.mux.HandleFunc("GET /api/v1/notifications", s.handleNotifications)
	s.mux.HandleFunc("POST /api/v1/notifications/clear", s.handleClearNotifications)
	s.mux.HandleFunc("GET /api/v1/memory", s.handleMemoryList)
	s.mux.HandleFunc("POST /api/v1/memory", s.handleMemoryAdd)
	s.mux.HandleFunc("DELETE /api/v1/memory/{id}", s.handleMemoryForget)
	s.mux.HandleFunc("GET /api/v1/memory/{id}/why", s.handleMemoryWhy)
	s.mux.HandleFunc("POST /api/v1/memory/{id}/{action}", s.handleMemoryDecision)
	s.mux.HandleFunc("POST /api/v1/plugins/reload", s.handlePluginsReload)
	s.mux.HandleFunc("POST /api/v1/plugins/{name}/messages", s.handlePluginMessage)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	return s
}

// SetToken sets the bearer token the TCP listener requires. Call it
// before serving.
func (s *Server) SetToken(token string) { s.token = token }

// SocketHandler serves the Unix socket: Host and Origin are checked, no token.
func (s *Server) SocketHandler() http.Handler { return s.guard(s.mux, false) }

// TCPHandler serves loopback TCP: Host, Origin and the bearer token are checked.
func (s *Server) TCPHandler() http.Handler { return s.guard(s.mux, true) }

// guard rejects what a local API must never serve: requests from browsers
// (an Origin header), DNS-rebinding (a foreign Host) and, over TCP, anyone
// without the token.
func (s *Server) guard(next http.Handler, needToken bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" {
			s.log.Warn("api: refused request with Origin header", "origin", r.Header.Get("Origin"), "path", r.URL.Path)
			writeError(w, http.StatusForbidden, "forbidden", "requests from browsers are not accepted")
			return
		}
		if !localHost(r.Host) {
			s.log.Warn("api: refused request with foreign Host", "host", r.Host, "path", r.URL.Path)
			writeError(w, http.StatusForbidden, "forbidden", "foreign Host header")
			return
		}
		// A plugin's message carries its own key, which its handler checks.
		if needToken && !pluginMessagePath(r) && !s.validToken(r.Header.Get("Authorization")) {
			s.log.Warn("api: refused request without valid token", "remote", r.RemoteAddr, "path", r.URL.Path)
			w.Header().Set("WWW-Authenticate", `Bearer realm="omnibrain"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token (see HOME/api-token)")
			return
		}
		// Every request body is a small JSON document; a runaway client
		// gets a decode error, not the daemon's memory.
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

func (s *Server) validToken(header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || s.token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

func localHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	switch host {
	case socketHost, "localhost":
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeUnix serves the socket at path until ctx is done. A stale socket
// file from a crashed daemon is replaced.
func (s *Server) ServeUnix(ctx context.Context, path string) error {
	if err := removeStaleSocket(path); err != nil {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("api: listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("api: %w", err)
	}
	return s.serve(ctx, ln, s.SocketHandler())
}

// ServeTCP serves addr (loopback only) until ctx is done.
func (s *Server) ServeTCP(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("api: listen %s: %w", addr, err)
	}
	return s.serve(ctx, ln, s.TCPHandler())
}

// serve serves an already open listener until ctx is done. The server's
// own complaints (bad requests, handler panics) go to the injected logger.
func (s *Server) serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutCtx)
		<-errc
		return ctx.Err()
	}
}

// removeStaleSocket deletes a socket file no daemon answers on, and refuses
// to start beside a live one.
func removeStaleSocket(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("api: another omnibrain is already serving %s", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("api: remove stale socket: %w", err)
	}
	return nil
}

// ErrorBody is the one JSON error shape of every failed request.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// fail maps a backend error to the error shape, logging what the caller
// is not told.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var be *BadRequestError
	switch {
	case errors.As(err, &be):
		writeError(w, http.StatusBadRequest, "bad_request", be.Error())
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, ErrConflict):
		writeError(w, http.StatusConflict, "conflict", err.Error())
	case errors.Is(err, context.Canceled):
		writeError(w, 499, "canceled", "request canceled")
	default:
		s.log.Error("api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

func notConfigured(w http.ResponseWriter, what string) {
	writeError(w, http.StatusNotImplemented, "unavailable", what+" is not available in this process")
}

// Errors that backends return to choose the status code.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// BadRequestError is a request the caller must fix.
type BadRequestError struct{ Msg string }

func (e *BadRequestError) Error() string { return e.Msg }

// BadRequest returns a *BadRequestError.
func BadRequest(format string, args ...any) error {
	return &BadRequestError{Msg: fmt.Sprintf(format, args...)}
}
