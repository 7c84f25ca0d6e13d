// Package config loads omnibrain's configuration: HOME/config.yaml, then
// OMNIBRAIN_* environment variables, then command-line flags, each layer
// overriding the one before.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/omnibrain/omnibrain/internal/suggest"
)

// FileName is the configuration file inside the home directory.
const FileName = "config.yaml"

// Config is the whole configuration. The zero value is not useful: start
// from Default or Load.
type Config struct {
	Home     string         `yaml:"-"`
	Location *time.Location `yaml:"-"`

	Timezone string `yaml:"timezone"`
	LogLevel string `yaml:"log_level"`

	Owner         Owner         `yaml:"owner"`
	API           API           `yaml:"api"`
	Telegram      Telegram      `yaml:"telegram"`
	Google        Google        `yaml:"google"`
	GitHub        GitHub        `yaml:"github"`
	LLM           LLM           `yaml:"llm"`
	Embedder      Embedder      `yaml:"embedder"`
	Approval      Approval      `yaml:"approval"`
	Schedule      Schedule      `yaml:"schedule"`
	Notifications Notifications `yaml:"notifications"`
	Plugins       Plugins       `yaml:"plugins"`
	Memory        Memory        `yaml:"memory"`

	// origin names the variable or flag that set a key, so an error about
	// a value that is not in config.yaml does not send the owner there.
	origin map[string]string
	// layout is where each key stands in config.yaml, for errors that
	// name the line.
	layout *layout
}

// envKeys maps the variables whose values Validate checks to their keys.
var envKeys = map[string]string{
	"OMNIBRAIN_TIMEZONE": "timezone", "OMNIBRAIN_LOG_LEVEL": "log_level", "OMNIBRAIN_API_LISTEN": "api.listen",
	"OMNIBRAIN_TELEGRAM_API_URL": "telegram.api_url", "OMNIBRAIN_GOOGLE_API_URL": "google.api_url",
	"OMNIBRAIN_GOOGLE_TOKEN_URL": "google.token_url", "OMNIBRAIN_GOOGLE_AUTH_URL": "google.auth_url",
	"OMNIBRAIN_GITHUB_API_URL": "github.api_url", "OMNIBRAIN_LLM_PROVIDER": "llm.provider",
	"OMNIBRAIN_LLM_BASE_URL": "llm.base_url", "OMNIBRAIN_EMBEDDER": "embedder.provider",
	"OMNIBRAIN_EMBEDDER_BASE_URL": "embedder.base_url",
}

// setBy records that source (a variable or a flag) set key.
func (c *Config) setBy(key, source string) {
	if c.origin == nil {
		c.origin = map[string]string{}
	}
	c.origin[key] = source
}

// keyName is key for an error message, with the variable or flag that set
// it: "llm.provider (set by OMNIBRAIN_LLM_PROVIDER)".
func (c *Config) keyName(key string) string {
	if src := c.origin[key]; src != "" {
		return key + " (set by " + src + ")"
	}
	return key
}

// Owner describes the person omnibrain works for.
type Owner struct {
	Name        string   `yaml:"name"`
	Emails      []string `yaml:"emails"` // the owner's own addresses: mail from them is outbound
	GitHubLogin string   `yaml:"github_login"`
	VIPs        []string `yaml:"vips"` // addresses or domains (@example.com) that always matter
}

// API configures the local REST API. The Unix socket in the home directory
// is always served; Listen adds a loopback TCP listener guarded by a token.
type API struct {
	Listen string `yaml:"listen"`
}

// Telegram configures the bot.
type Telegram struct {
	Token     Secret `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	APIURL    string `yaml:"api_url"`
	OwnerID   int64  `yaml:"owner_id"`
}

// Google configures Gmail and Calendar access.
type Google struct {
	APIURL       string `yaml:"api_url"`   // serves /gmail/v1/, /upload/gmail/v1/, /calendar/v3/
	TokenURL     string `yaml:"token_url"` // OAuth token endpoint
	AuthURL      string `yaml:"auth_url"`  // OAuth consent page
	ClientID     string `yaml:"client_id"`
	ClientSecret Secret `yaml:"client_secret"`
	// ClientSecretFile holds the client secret instead (0600).
	ClientSecretFile string `yaml:"client_secret_file"`
	Credentials      string `yaml:"credentials"` // path of a downloaded client-secret JSON

	GmailBackfillDays  int `yaml:"gmail_backfill_days"`
	CalendarPastDays   int `yaml:"calendar_past_days"`
	CalendarFutureDays int `yaml:"calendar_future_days"`
}

// GitHubTokenFile is where `omnibrain auth github` stores the token, in the
// home directory; it is read when no token or token_file is configured.
const GitHubTokenFile = "github-token"

// GitHub configures the GitHub collector and executor.
type GitHub struct {
	Token     Secret `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	APIURL    string `yaml:"api_url"`
}

// LLM configures the model providers and the routing of tasks to them.
type LLM struct {
	// The default provider, as set by OMNIBRAIN_LLM_*: openai (any
	// OpenAI-compatible server), anthropic, ollama, none, or empty for
	// "a local Ollama if one answers, else none".
	Provider   string `yaml:"provider"`
	BaseURL    string `yaml:"base_url"`
	APIKey     Secret `yaml:"api_key"`
	APIKeyFile string `yaml:"api_key_file"`
	Model      string `yaml:"model"`

	// Further named providers that routes can refer to.
	Providers []Provider `yaml:"providers"`
	// Routes maps a task (triage, draft, planning, analysis, reflection,
	// briefing, chat) to an ordered provider list.
	Routes map[string]Route `yaml:"routes"`
	// Prices per model in USD per million tokens.
	Prices map[string]Price `yaml:"prices"`
	// DailyBudgetUSD pauses background model work once spent; 0 means no limit.
	DailyBudgetUSD float64 `yaml:"daily_budget_usd"`
	// HardLimitUSD stops interactive calls (chat) too once the day's spend
	// reaches it; 0 means chat is never stopped by spend.
	HardLimitUSD float64 `yaml:"hard_limit_usd"`
	// Timeout bounds one model call; a stream, the silence between its
	// events (up to ten times it in all).
	Timeout time.Duration `yaml:"timeout"`
}

// Provider is one configured model endpoint.
type Provider struct {
	Name       string `yaml:"name"`
	Type       string `yaml:"type"` // openai, anthropic, ollama
	BaseURL    string `yaml:"base_url"`
	APIKey     Secret `yaml:"api_key"`
	APIKeyFile string `yaml:"api_key_file"`
	Model      string `yaml:"model"`
}

// Route is the provider order for one task.
type Route struct {
	Providers     []string `yaml:"providers"`
	Privacy       string   `yaml:"privacy"` // "local": never leaves loopback
	MaxIterations int      `yaml:"max_iterations"`
}

// Price is a model's price in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
}

// Embedder selects the text embedder behind vector search.
type Embedder struct {
	Provider   string `yaml:"provider"` // builtin (default), openai, ollama
	BaseURL    string `yaml:"base_url"`
	Model      string `yaml:"model"`
	APIKey     Secret `yaml:"api_key"`
	APIKeyFile string `yaml:"api_key_file"`
}

// Approval configures the approval gate.
type Approval struct {
	Expiry time.Duration `yaml:"expiry"`
	Snooze time.Duration `yaml:"snooze"`
	// SendDelay is how long an approved action waits before it runs, so
	// the owner can undo it (OMNIBRAIN_SEND_DELAY; 0s: at once).
	SendDelay time.Duration `yaml:"send_delay"`
}

// Schedule holds poll intervals and cron specs (5 fields, owner's timezone).
type Schedule struct {
	Mail            time.Duration `yaml:"mail"`
	Calendar        time.Duration `yaml:"calendar"`
	GitHub          time.Duration `yaml:"github"`
	Patterns        string        `yaml:"patterns"`
	MorningBriefing string        `yaml:"morning_briefing"`
	EveningBriefing string        `yaml:"evening_briefing"`
	WeeklyReview    string        `yaml:"weekly_review"`
}

// Notifications is the notification policy.
type Notifications struct {
	QuietStart  string `yaml:"quiet_start"` // "22:30", local time; empty disables quiet hours
	QuietEnd    string `yaml:"quiet_end"`
	DailyBudget int    `yaml:"daily_budget"` // non-critical notifications per day
}

// Plugins configures external tools.
type Plugins struct {
	Dir string `yaml:"dir"` // default HOME/plugins
	// VerifyInterval is how often the daemon asks chat-tools plugins'
	// servers whether their manifest changed (default 1h).
	VerifyInterval time.Duration `yaml:"verify_interval"`
	// MessagesPerHour bounds each plugin's own messages to the owner
	// (default 10).
	MessagesPerHour int `yaml:"messages_per_hour"`
	// CallTimeout bounds one chat-tools call (default 30s).
	CallTimeout time.Duration `yaml:"call_timeout"`
}

// Memory configures what omnibrain remembers about the owner.
type Memory struct {
	// RecentContextDays is how long a recent_context fact lives (14).
	RecentContextDays int `yaml:"recent_context_days"`
}

// Default returns the configuration used when nothing is configured.
func Default(home string) *Config {
	return &Config{
		Home:     home,
		Location: time.Local,
		Timezone: "",
		LogLevel: "info",
		Telegram: Telegram{APIURL: "https://api.telegram.org"},
		Google: Google{
			APIURL:             "https://www.googleapis.com",
			TokenURL:           "https://oauth2.googleapis.com/token",
			AuthURL:            "https://accounts.google.com/o/oauth2/auth",
			GmailBackfillDays:  30,
			CalendarPastDays:   7,
			CalendarFutureDays: 30,
		},
		GitHub:   GitHub{APIURL: "https://api.github.com"},
		LLM:      LLM{Timeout: 2 * time.Minute},
		Embedder: Embedder{Provider: "builtin"},
		Approval: Approval{Expiry: 24 * time.Hour, Snooze: 2 * time.Hour, SendDelay: 10 * time.Second},
		Plugins:  Plugins{VerifyInterval: time.Hour, MessagesPerHour: 10, CallTimeout: 30 * time.Second},
		Memory:   Memory{RecentContextDays: 14},
		Schedule: Schedule{
			Mail:            5 * time.Minute,
			Calendar:        15 * time.Minute,
			GitHub:          10 * time.Minute,
			Patterns:        "0 * * * *",
			MorningBriefing: "0 7 * * *",
			EveningBriefing: "0 22 * * *",
			WeeklyReview:    "0 8 * * 1",
		},
		Notifications: Notifications{QuietStart: "22:30", QuietEnd: "07:00", DailyBudget: 20},
	}
}

// Flags are the command-line overrides, applied last. Empty means unset.
type Flags struct {
	Timezone  string
	LogLevel  string
	APIListen string
}

// ResolveHome picks the home directory: the flag, then OMNIBRAIN_HOME, then
// ~/.omnibrain.
func ResolveHome(flagHome string, getenv func(string) string) (string, error) {
	home := flagHome
	if home == "" {
		home = getenv("OMNIBRAIN_HOME")
	}
	if home == "" {
		userHome, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find home directory: %w (set OMNIBRAIN_HOME or --home)", err)
		}
		home = filepath.Join(userHome, ".omnibrain")
	}
	return filepath.Abs(home)
}

// EnsureHome creates the home directory (mode 0700) if it does not exist.
func EnsureHome(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create home %s: %w", home, err)
	}
	return nil
}

// Load reads HOME/config.yaml (if present), applies the environment and the
// flags, resolves secret files and validates the result. Every problem is
// reported at once, in an *Error, with its line in the file.
func Load(home string, getenv func(string) string, flags Flags) (*Config, error) {
	cfg := Default(home)
	path := filepath.Join(home, FileName)
	problems, err := cfg.readFile(path)
	if err != nil {
		return nil, err
	}
	cfg.applyEnv(getenv)
	cfg.applyFlags(flags)
	problems = append(problems, cfg.resolveSecrets()...)
	problems = append(problems, cfg.problems()...)
	if err := newError(path, problems); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readFile decodes config.yaml into c. A file that cannot be read or
// parsed is an error; values of the wrong type and unknown keys are
// problems, and the rest of the file is still read and checked.
func (c *Config) readFile(path string) ([]Problem, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, newError(path, []Problem{syntaxProblem(b, err)})
	}
	c.layout = newLayout(&doc)
	var problems []Problem
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, newError(path, []Problem{syntaxProblem(b, err)})
		}
		problems = c.layout.typeProblems(te)
	}
	if c.hasInlineSecret() {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		if err := CheckPrivate(path, fi.Mode()); err != nil {
			problems = append(problems, Problem{Text: err.Error()})
		}
	}
	return problems, nil
}

func (c *Config) hasInlineSecret() bool {
	if c.Telegram.Token.IsSet() || c.Google.ClientSecret.IsSet() || c.GitHub.Token.IsSet() ||
		c.LLM.APIKey.IsSet() || c.Embedder.APIKey.IsSet() {
		return true
	}
	for _, p := range c.LLM.Providers {
		if p.APIKey.IsSet() {
			return true
		}
	}
	return false
}

// applyEnv applies the OMNIBRAIN_* variables of the external contract.
func (c *Config) applyEnv(getenv func(string) string) {
	set := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
			if key, ok := envKeys[name]; ok {
				c.setBy(key, name)
			}
		}
	}
	setSecret := func(name string, dst *Secret) {
		if v := getenv(name); v != "" {
			*dst = Secret(v)
		}
	}
	set("OMNIBRAIN_TIMEZONE", &c.Timezone)
	set("OMNIBRAIN_LOG_LEVEL", &c.LogLevel)
	set("OMNIBRAIN_API_LISTEN", &c.API.Listen)

	setSecret("OMNIBRAIN_TELEGRAM_TOKEN", &c.Telegram.Token)
	set("OMNIBRAIN_TELEGRAM_API_URL", &c.Telegram.APIURL)
	if v := getenv("OMNIBRAIN_TELEGRAM_OWNER_ID"); v != "" {
		var id int64
		if _, err := fmt.Sscan(v, &id); err == nil {
			c.Telegram.OwnerID = id
		} else {
			c.Telegram.OwnerID = -1 // rejected by Validate with the variable's name
		}
		c.setBy("telegram.owner_id", "OMNIBRAIN_TELEGRAM_OWNER_ID")
	}

	set("OMNIBRAIN_GOOGLE_API_URL", &c.Google.APIURL)
	set("OMNIBRAIN_GOOGLE_TOKEN_URL", &c.Google.TokenURL)
	set("OMNIBRAIN_GOOGLE_AUTH_URL", &c.Google.AuthURL)
	set("OMNIBRAIN_GOOGLE_CLIENT_ID", &c.Google.ClientID)
	setSecret("OMNIBRAIN_GOOGLE_CLIENT_SECRET", &c.Google.ClientSecret)
	set("OMNIBRAIN_GOOGLE_CREDENTIALS", &c.Google.Credentials)

	setSecret("OMNIBRAIN_GITHUB_TOKEN", &c.GitHub.Token)
	set("OMNIBRAIN_GITHUB_API_URL", &c.GitHub.APIURL)

	set("OMNIBRAIN_LLM_PROVIDER", &c.LLM.Provider)
	set("OMNIBRAIN_LLM_BASE_URL", &c.LLM.BaseURL)
	setSecret("OMNIBRAIN_LLM_API_KEY", &c.LLM.APIKey)
	set("OMNIBRAIN_LLM_MODEL", &c.LLM.Model)

	if v := getenv("OMNIBRAIN_SEND_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			d = -1 // rejected by Validate with the variable's name
		}
		c.Approval.SendDelay = d
		c.setBy("approval.send_delay", "OMNIBRAIN_SEND_DELAY")
	}

	set("OMNIBRAIN_EMBEDDER", &c.Embedder.Provider)
	set("OMNIBRAIN_EMBEDDER_BASE_URL", &c.Embedder.BaseURL)
	set("OMNIBRAIN_EMBEDDER_MODEL", &c.Embedder.Model)
}

func (c *Config) applyFlags(f Flags) {
	if f.Timezone != "" {
		c.Timezone = f.Timezone
		c.setBy("timezone", "--timezone")
	}
	if f.LogLevel != "" {
		c.LogLevel = f.LogLevel
		c.setBy("log_level", "--log-level")
	}
	if f.APIListen != "" {
		c.API.Listen = f.APIListen
		c.setBy("api.listen", "--api-listen")
	}
}

func (c *Config) resolveSecrets() []Problem {
	var problems []Problem
	read := func(file string, dst *Secret, key string) {
		if file == "" || dst.IsSet() {
			return
		}
		sec, err := ReadSecretFile(c.path(file))
		if err != nil {
			problems = append(problems, c.problem(key, "%s: %v", key, err))
			return
		}
		*dst = sec
	}
	read(c.Telegram.TokenFile, &c.Telegram.Token, "telegram.token_file")
	read(c.Google.ClientSecretFile, &c.Google.ClientSecret, "google.client_secret_file")
	if c.GitHub.TokenFile == "" && !c.GitHub.Token.IsSet() {
		if _, err := os.Stat(c.Path(GitHubTokenFile)); err == nil {
			c.GitHub.TokenFile = GitHubTokenFile
		}
	}
	read(c.GitHub.TokenFile, &c.GitHub.Token, "github.token_file")
	read(c.LLM.APIKeyFile, &c.LLM.APIKey, "llm.api_key_file")
	read(c.Embedder.APIKeyFile, &c.Embedder.APIKey, "embedder.api_key_file")
	for i := range c.LLM.Providers {
		p := &c.LLM.Providers[i]
		read(p.APIKeyFile, &p.APIKey, fmt.Sprintf("llm.providers[%d].api_key_file", i))
	}
	return problems
}

// path resolves a path relative to the home directory.
func (c *Config) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Home, p)
}

// Validate checks every field and loads the timezone.
func (c *Config) Validate() error {
	return newError(c.Path(FileName), c.problems())
}

// problem is a problem with the value at key, on the key's line when
// the value came from the file.
func (c *Config) problem(key, format string, args ...any) Problem {
	p := Problem{Text: fmt.Sprintf(format, args...)}
	if c.origin[key] == "" {
		p.Line = c.layout.line(key)
	}
	return p
}

// problems checks every field and loads the timezone.
func (c *Config) problems() []Problem {
	var out []Problem
	bad := func(key, format string, args ...any) { out = append(out, c.problem(key, format, args...)) }

	loc, err := loadLocation(c.Timezone)
	if err != nil {
		bad("timezone", "%s %q: %v (use an IANA name such as Europe/Berlin)", c.keyName("timezone"), c.Timezone, err)
	} else {
		c.Location = loc
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "%s %q: want debug, info, warn or error%s", c.keyName("log_level"), c.LogLevel, didYouMean(c.LogLevel, []string{"debug", "info", "warn", "error"}))
	}
	if c.API.Listen != "" {
		if err := checkLoopbackAddr(c.API.Listen); err != nil {
			bad("api.listen", "%s: %v", c.keyName("api.listen"), err)
		}
	}
	if c.Telegram.OwnerID < 0 {
		bad("telegram.owner_id", "%s: want a positive Telegram user id", c.keyName("telegram.owner_id"))
	}
	for name, u := range map[string]string{
		"telegram.api_url":  c.Telegram.APIURL,
		"google.api_url":    c.Google.APIURL,
		"google.token_url":  c.Google.TokenURL,
		"google.auth_url":   c.Google.AuthURL,
		"github.api_url":    c.GitHub.APIURL,
		"llm.base_url":      c.LLM.BaseURL,
		"embedder.base_url": c.Embedder.BaseURL,
	} {
		if u == "" {
			continue
		}
		if err := checkURL(u); err != nil {
			bad(name, "%s: %v", c.keyName(name), err)
		}
	}
	switch c.LLM.Provider {
	case "", "openai", "anthropic", "ollama", "none":
	default:
		bad("llm.provider", "%s %q: want openai, anthropic, ollama or none%s", c.keyName("llm.provider"), c.LLM.Provider, didYouMean(c.LLM.Provider, []string{"openai", "anthropic", "ollama", "none"}))
	}
	names := map[string]bool{"default": true}
	for i, p := range c.LLM.Providers {
		key := fmt.Sprintf("llm.providers[%d]", i)
		if p.Name == "" || names[p.Name] {
			bad(key+".name", "llm.providers: every provider needs a unique name (got %q)", p.Name)
		}
		names[p.Name] = true
		switch p.Type {
		case "openai", "anthropic", "ollama":
		default:
			bad(key+".type", "llm.providers[%s].type %q: want openai, anthropic or ollama", p.Name, p.Type)
		}
	}
	for task, r := range c.LLM.Routes {
		for _, p := range r.Providers {
			if !names[p] {
				bad("llm.routes."+task+".providers", "llm.routes.%s: unknown provider %q%s", task, p, didYouMean(p, mapKeys(names)))
			}
		}
		if r.Privacy != "" && r.Privacy != "local" {
			bad("llm.routes."+task+".privacy", "llm.routes.%s.privacy %q: want local or nothing", task, r.Privacy)
		}
	}
	if c.LLM.DailyBudgetUSD < 0 {
		bad("llm.daily_budget_usd", "llm.daily_budget_usd must not be negative")
	}
	if c.LLM.HardLimitUSD < 0 {
		bad("llm.hard_limit_usd", "llm.hard_limit_usd must not be negative")
	}
	if c.LLM.Timeout <= 0 {
		bad("llm.timeout", "llm.timeout must be positive")
	}
	switch c.Embedder.Provider {
	case "builtin", "openai", "ollama":
	default:
		bad("embedder.provider", "%s %q: want builtin, openai or ollama%s", c.keyName("embedder.provider"), c.Embedder.Provider, didYouMean(c.Embedder.Provider, []string{"builtin", "openai", "ollama"}))
	}
	if c.Approval.Expiry <= 0 {
		bad("approval.expiry", "approval.expiry must be positive")
	}
	if c.Approval.SendDelay < 0 || c.Approval.SendDelay > time.Hour {
		bad("approval.send_delay", "%s must be a duration from 0s (at once) to 1h, such as 10s", c.keyName("approval.send_delay"))
	}
	if c.Plugins.VerifyInterval < time.Minute {
		bad("plugins.verify_interval", "plugins.verify_interval: %v is too short (at least 1m)", c.Plugins.VerifyInterval)
	}
	if c.Plugins.MessagesPerHour < 1 {
		bad("plugins.messages_per_hour", "plugins.messages_per_hour must be at least 1")
	}
	if c.Plugins.CallTimeout <= 0 || c.Plugins.CallTimeout > 10*time.Minute {
		bad("plugins.call_timeout", "plugins.call_timeout: %v must be between 0 and 10m", c.Plugins.CallTimeout)
	}
	if d := c.Memory.RecentContextDays; d < 1 || d > 365 {
		bad("memory.recent_context_days", "memory.recent_context_days: %d must be a number of days from 1 to 365", d)
	}
	for name, d := range map[string]time.Duration{"schedule.mail": c.Schedule.Mail, "schedule.calendar": c.Schedule.Calendar, "schedule.github": c.Schedule.GitHub} {
		if d < 10*time.Second {
			bad(name, "%s: %v is too short (at least 10s)", name, d)
		}
	}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for name, spec := range map[string]string{
		"schedule.patterns": c.Schedule.Patterns, "schedule.morning_briefing": c.Schedule.MorningBriefing,
		"schedule.evening_briefing": c.Schedule.EveningBriefing, "schedule.weekly_review": c.Schedule.WeeklyReview,
	} {
		if _, err := parser.Parse(spec); err != nil {
			bad(name, "%s %q: %v (want 5 fields: minute hour day-of-month month day-of-week, e.g. \"0 7 * * *\" for 07:00 every day)", name, spec, err)
		}
	}
	for name, v := range map[string]string{"notifications.quiet_start": c.Notifications.QuietStart, "notifications.quiet_end": c.Notifications.QuietEnd} {
		if v == "" {
			continue
		}
		if _, err := time.Parse("15:04", v); err != nil {
			bad(name, "%s %q: want HH:MM, e.g. 22:30", name, v)
		}
	}
	return out
}

// didYouMean is a hint naming the candidate word most likely meant, or "".
func didYouMean(word string, candidates []string) string {
	if s := suggest.Closest(word, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// loadLocation loads an IANA zone; empty means the system zone.
func loadLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.Local, nil
	}
	return time.LoadLocation(name)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: want an http or https URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", raw)
	}
	return nil
}

// TimezoneName is the configured zone's name, resolving the system zone.
func (c *Config) TimezoneName() string {
	if c.Timezone != "" {
		return c.Timezone
	}
	if tz := os.Getenv("TZ"); tz != "" {
		return tz
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			return target[i+len("zoneinfo/"):]
		}
	}
	return c.Location.String()
}

// Secrets returns every configured secret value, for log redaction.
func (c *Config) Secrets() []string {
	var out []string
	for _, s := range []Secret{c.Telegram.Token, c.Google.ClientSecret, c.GitHub.Token, c.LLM.APIKey, c.Embedder.APIKey} {
		if s.IsSet() {
			out = append(out, s.Reveal())
		}
	}
	for _, p := range c.LLM.Providers {
		if p.APIKey.IsSet() {
			out = append(out, p.APIKey.Reveal())
		}
	}
	return out
}

// Path returns a path inside the home directory.
func (c *Config) Path(elem ...string) string {
	return filepath.Join(append([]string{c.Home}, elem...)...)
}

// checkLoopbackAddr accepts only loopback TCP addresses: the API is local.
func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %v (want host:port, e.g. 127.0.0.1:7423)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: the API only listens on loopback (127.0.0.1 or [::1])", addr)
	}
	return nil
}
