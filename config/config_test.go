package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeConfig(t *testing.T, home, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, FileName), []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultsWithoutFile(t *testing.T) {
	cfg, err := Load(t.TempDir(), envFrom(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Telegram.APIURL != "https://api.telegram.org" || cfg.GitHub.APIURL != "https://api.github.com" {
		t.Errorf("default endpoints: %q %q", cfg.Telegram.APIURL, cfg.GitHub.APIURL)
	}
	if cfg.Schedule.Mail != 5*time.Minute || cfg.Schedule.MorningBriefing != "0 7 * * *" || cfg.Approval.Expiry != 24*time.Hour {
		t.Errorf("default schedule/expiry: %+v %v", cfg.Schedule, cfg.Approval.Expiry)
	}
	if cfg.Location != time.Local {
		t.Errorf("default location = %v, want the system zone", cfg.Location)
	}
}

func TestPrecedenceFileEnvFlags(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "timezone: Europe/Berlin\nlog_level: debug\ngithub:\n  api_url: https://ghe.example.com/api/v3\n", 0o600)

	tests := []struct {
		name     string
		env      map[string]string
		flags    Flags
		wantTZ   string
		wantLog  string
		wantGHE  string
		wantLLM  string
		wantOwn  int64
		wantSecr bool
	}{
		{"file only", nil, Flags{}, "Europe/Berlin", "debug", "https://ghe.example.com/api/v3", "", 0, false},
		{"env beats file", map[string]string{"OMNIBRAIN_TIMEZONE": "America/New_York", "OMNIBRAIN_GITHUB_API_URL": "http://127.0.0.1:9/", "OMNIBRAIN_LLM_PROVIDER": "anthropic", "OMNIBRAIN_TELEGRAM_OWNER_ID": "4242", "OMNIBRAIN_TELEGRAM_TOKEN": "123:abcdef"},
			Flags{}, "America/New_York", "debug", "http://127.0.0.1:9/", "anthropic", 4242, true},
		{"flags beat env", map[string]string{"OMNIBRAIN_TIMEZONE": "America/New_York"}, Flags{Timezone: "Asia/Tokyo", LogLevel: "warn"}, "Asia/Tokyo", "warn", "https://ghe.example.com/api/v3", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(home, envFrom(tc.env), tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Timezone != tc.wantTZ || cfg.Location.String() != tc.wantTZ {
				t.Errorf("timezone = %q (%v), want %q", cfg.Timezone, cfg.Location, tc.wantTZ)
			}
			if cfg.LogLevel != tc.wantLog || cfg.GitHub.APIURL != tc.wantGHE || cfg.LLM.Provider != tc.wantLLM || cfg.Telegram.OwnerID != tc.wantOwn {
				t.Errorf("got log=%q ghe=%q llm=%q owner=%d", cfg.LogLevel, cfg.GitHub.APIURL, cfg.LLM.Provider, cfg.Telegram.OwnerID)
			}
			if cfg.Telegram.Token.IsSet() != tc.wantSecr {
				t.Errorf("telegram token set = %v", cfg.Telegram.Token.IsSet())
			}
		})
	}
}

func TestFileErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown key", "timezone: UTC\ntelegram:\n  tokn: x\n", `line 3: unknown key "tokn"`},
		{"two unknown keys", "bogus: 1\ntimezone: UTC\nschedule:\n  mial: 5m\n", "line 1: unknown key \"bogus\"\n  line 4: unknown key \"mial\""},
		{"wrong type", "approval:\n  expiry: soon\n", `line 2: approval.expiry must be a duration such as 30s, 5m or 24h (it is "soon")`},
		{"a list wanted", "owner:\n  emails: ada@example.com\n", "line 2: owner.emails must be a list, e.g. [ada@example.com]"},
		{"a list in a block", "owner:\n  emails:\n    name: x\n", "line 3: owner.emails must be a list"},
		{"a number wanted", "notifications:\n  daily_budget: lots\n", `line 2: notifications.daily_budget must be a whole number (it is "lots")`},
		{"a section wanted", "telegram: yes\n", "line 1: telegram must be a section"},
		{"a route's providers", "llm:\n  routes:\n    chat:\n      providers: default\n", "line 4: llm.routes.chat.providers must be a list, e.g. [default]"},
		{"unknown key suggested", "timezone: UTC\ntelegram:\n  tokn: x\n", `line 3: unknown key "tokn" (did you mean "token"?)`},
		{"unclosed list", "a: 1\nb: 2\ntimezone: [UTC\nlog_level: info\n", "line 3: did not find expected ',' or ']'"},
		{"tab on its line", "timezone: UTC\nschedule:\n\tmail: 5m\n", "line 3: a tab in the indentation: YAML indents with spaces only"},
		{"bad indentation", "timezone: UTC\nschedule:\n  mail: 5m\n calendar: 5m\n", "line 4: did not find expected key"},
		{"stray list entry", "timezone: UTC\n- mail\n", "line 2:"},
		{"duplicate key", "timezone: UTC\ntimezone: UTC\n", "line 2"},
		{"tab indentation", "schedule:\n\tmail: 5m\n", "line 2"},
		{"binary garbage", "\x00\x01\xfe\xff", "control characters"},
		{"bad yaml", "timezone: [UTC\n", "line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			writeConfig(t, home, tc.body, 0o600)
			_, err := Load(home, envFrom(nil), Flags{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), FileName) {
				t.Fatalf("err = %v, want it to name %s and %q", err, FileName, tc.want)
			}
		})
	}
}

// Bad values carry the line of their key, type errors and value errors
// come together in one report, ordered by line.
func TestEveryProblemAtOnceWithItsLine(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `timezone: Mars/Olympus
log_level: degub
owner:
  emails: ada@example.com
api:
  listen: 0.0.0.0:7423
schedule:
  mial: 5m
  morning_briefing: "every morning"
notifications:
  quiet_start: "25:99"
`, 0o600)
	_, err := Load(home, envFrom(nil), Flags{})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	want := []string{
		`line 1: timezone "Mars/Olympus"`,
		`line 2: log_level "degub": want debug, info, warn or error (did you mean "debug"?)`,
		`line 4: owner.emails must be a list, e.g. [ada@example.com]`,
		`line 6: api.listen: "0.0.0.0:7423"`,
		`line 8: unknown key "mial" (did you mean "mail"?)`,
		`line 9: schedule.morning_briefing "every morning"`,
		`line 11: notifications.quiet_start "25:99": want HH:MM`,
	}
	msg := err.Error()
	if !strings.Contains(msg, "7 problems") {
		t.Errorf("the count is missing:\n%s", msg)
	}
	last := -1
	for _, w := range want {
		i := strings.Index(msg, w)
		if i < 0 {
			t.Errorf("missing %q in:\n%s", w, msg)
			continue
		}
		if i < last {
			t.Errorf("%q is out of line order in:\n%s", w, msg)
		}
		last = i
	}
}

func TestValidationCollectsEveryProblem(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `timezone: Mars/Olympus
log_level: loud
api:
  listen: 0.0.0.0:7423
llm:
  provider: gpt
  routes:
    chat:
      providers: [nowhere]
      privacy: public
schedule:
  mail: 1s
  morning_briefing: "every morning"
notifications:
  quiet_start: "25:99"
`, 0o600)
	_, err := Load(home, envFrom(map[string]string{"OMNIBRAIN_TELEGRAM_API_URL": "ftp://x", "OMNIBRAIN_TELEGRAM_OWNER_ID": "me"}), Flags{})
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"timezone", "log_level", "api.listen", "llm.provider", "unknown provider", "privacy", "schedule.mail", "morning_briefing", "quiet_start", "telegram.api_url", "OMNIBRAIN_TELEGRAM_OWNER_ID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestInlineSecretNeedsPrivateFile(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "telegram:\n  token: \"123456:secret-token\"\n", 0o644)
	if _, err := Load(home, envFrom(nil), Flags{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable config with a token: err = %v, want a chmod 600 hint", err)
	}
	os.Chmod(filepath.Join(home, FileName), 0o600)
	cfg, err := Load(home, envFrom(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Telegram.Token.Reveal() != "123456:secret-token" {
		t.Fatal("token not read")
	}
	// Without secrets a readable config is fine.
	writeConfig(t, home, "timezone: UTC\n", 0o644)
	if _, err := Load(home, envFrom(nil), Flags{}); err != nil {
		t.Fatalf("config without secrets: %v", err)
	}
}

func TestSecretFiles(t *testing.T) {
	home := t.TempDir()
	tokenPath := filepath.Join(home, "tg-token")
	if err := WriteSecretFile(tokenPath, []byte("999:filetoken\n")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(tokenPath)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("WriteSecretFile mode = %o", fi.Mode().Perm())
	}
	writeConfig(t, home, "telegram:\n  token_file: tg-token\n", 0o644)
	cfg, err := Load(home, envFrom(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Telegram.Token.Reveal() != "999:filetoken" {
		t.Fatalf("token from file = %q", cfg.Telegram.Token.Reveal())
	}
	os.Chmod(tokenPath, 0o640)
	if _, err := Load(home, envFrom(nil), Flags{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("group-readable token file: err = %v", err)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("123:topsecretvalue")
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("x", "token", s, "cfg", Telegram{Token: s})
	b, _ := json.Marshal(struct{ T Secret }{s})
	out := buf.String() + fmt.Sprint(s) + fmt.Sprintf("%v %+v %#v %s", s, Telegram{Token: s}, s, s) + string(b)
	if strings.Contains(out, "topsecretvalue") {
		t.Fatalf("secret leaked: %s", out)
	}
	if s.Reveal() != "123:topsecretvalue" {
		t.Fatal("Reveal lost the value")
	}
}

func TestResolveHome(t *testing.T) {
	h, err := ResolveHome("", envFrom(map[string]string{"OMNIBRAIN_HOME": "/tmp/x"}))
	if err != nil || h != "/tmp/x" {
		t.Fatalf("env home = %q, %v", h, err)
	}
	h, _ = ResolveHome("/tmp/flag", envFrom(map[string]string{"OMNIBRAIN_HOME": "/tmp/x"}))
	if h != "/tmp/flag" {
		t.Fatalf("flag home = %q", h)
	}
	dir := filepath.Join(t.TempDir(), "new", "home")
	if err := EnsureHome(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("home mode = %v, %v", fi.Mode().Perm(), err)
	}
}

func FuzzLoadConfig(f *testing.F) {
	f.Add("timezone: UTC\n")
	f.Add("llm:\n  routes:\n    chat: {providers: [default]}\n")
	f.Add("schedule:\n  mail: 5m\n  patterns: '@hourly'\n")
	f.Add(":\n- [")
	f.Fuzz(func(t *testing.T, body string) {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, FileName), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(home, envFrom(nil), Flags{})
		if err == nil && cfg.Location == nil {
			t.Fatal("accepted config without a location")
		}
	})
}

// A bad value from a variable or a flag is reported with its name, so the
// owner does not go looking for it in config.yaml.
func TestValidationNamesTheVariableOrFlag(t *testing.T) {
	tests := []struct {
		env   map[string]string
		flags Flags
		want  string
	}{
		{map[string]string{"OMNIBRAIN_TIMEZONE": "Mars/X"}, Flags{}, `timezone (set by OMNIBRAIN_TIMEZONE) "Mars/X"`},
		{nil, Flags{Timezone: "Mars/X"}, `timezone (set by --timezone) "Mars/X"`},
		{map[string]string{"OMNIBRAIN_LLM_PROVIDER": "gpt"}, Flags{}, `llm.provider (set by OMNIBRAIN_LLM_PROVIDER) "gpt"`},
		{map[string]string{"OMNIBRAIN_GITHUB_API_URL": "ftp://x"}, Flags{}, "github.api_url (set by OMNIBRAIN_GITHUB_API_URL):"},
		{nil, Flags{LogLevel: "loud"}, `log_level (set by --log-level) "loud"`},
	}
	for _, tc := range tests {
		_, err := Load(t.TempDir(), envFrom(tc.env), tc.flags)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %+v: %v, want %q", tc.env, tc.flags, err, tc.want)
		}
	}
	// From the file, the key alone.
	home := t.TempDir()
	writeConfig(t, home, "timezone: Mars/X\n", 0o600)
	if _, err := Load(home, envFrom(nil), Flags{}); err == nil || !strings.Contains(err.Error(), `timezone "Mars/X"`) {
		t.Errorf("from the file: %v", err)
	}
}

// memory.recent_context_days: 14 unless set; a value that is not a
// sensible number of days is an error naming its line.
func TestMemoryRecentContextDays(t *testing.T) {
	cfg, err := Load(t.TempDir(), envFrom(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Memory.RecentContextDays != 14 {
		t.Errorf("default recent_context_days = %d, want 14", cfg.Memory.RecentContextDays)
	}
	home := t.TempDir()
	writeConfig(t, home, "memory:\n  recent_context_days: 30\n", 0o600)
	if cfg, err = Load(home, envFrom(nil), Flags{}); err != nil {
		t.Fatal(err)
	}
	if cfg.Memory.RecentContextDays != 30 {
		t.Errorf("recent_context_days = %d, want 30 from the file", cfg.Memory.RecentContextDays)
	}
	for _, v := range []string{"0", "-3", "400"} {
		writeConfig(t, home, "log_level: info\nmemory:\n  recent_context_days: "+v+"\n", 0o600)
		_, err := Load(home, envFrom(nil), Flags{})
		if err == nil || !strings.Contains(err.Error(), "line 3: memory.recent_context_days: "+v+" must be a number of days from 1 to 365") {
			t.Errorf("recent_context_days %s: err = %v", v, err)
		}
	}
}
