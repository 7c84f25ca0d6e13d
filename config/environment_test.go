package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What the owner's shell sets and the home does not: found, then written
// into the home (secrets in 0600 files, the rest in config.yaml, whose
// comments and other keys stay), after which nothing is missing.
func TestEnvironmentSavedIntoTheHome(t *testing.T) {
	home := t.TempDir()
	orig := "# my settings\nowner:\n  name: Emma # that is me\ntelegram:\n  api_url: https://tg.example\n"
	if err := os.WriteFile(filepath.Join(home, FileName), []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"OMNIBRAIN_TELEGRAM_TOKEN": "123:secret", "OMNIBRAIN_TELEGRAM_OWNER_ID": "4242", "OMNIBRAIN_TELEGRAM_API_URL": "https://tg.example",
		"OMNIBRAIN_LLM_API_KEY": "sk-shell", "OMNIBRAIN_LLM_PROVIDER": "openai", "OMNIBRAIN_LLM_MODEL": "gpt-x",
		"OMNIBRAIN_LLM_BASE_URL": "http://127.0.0.1:9/v1", "OMNIBRAIN_SEND_DELAY": "30s", "OMNIBRAIN_GOOGLE_CLIENT_SECRET": "gsecret",
		"OMNIBRAIN_GOOGLE_CLIENT_ID": "gid",
	}
	getenv := func(k string) string { return env[k] }
	missing, err := OnlyInEnvironment(home, getenv)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range missing {
		names = append(names, s.Name)
	}
	got := strings.Join(names, " ")
	for n := range env {
		if n == "OMNIBRAIN_TELEGRAM_API_URL" {
			if strings.Contains(got, n) {
				t.Errorf("%s is in config.yaml already, yet listed", n)
			}
			continue
		}
		if !strings.Contains(got, n) {
			t.Errorf("%s not listed: %s", n, got)
		}
	}
	if err := SaveEnvironment(home, getenv, missing); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(home, func(string) string { return "" }, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Telegram.Token.Reveal() != "123:secret" || cfg.Telegram.OwnerID != 4242 || cfg.LLM.APIKey.Reveal() != "sk-shell" ||
		cfg.LLM.Model != "gpt-x" || cfg.Approval.SendDelay != 30*time.Second || cfg.Google.ClientSecret.Reveal() != "gsecret" || cfg.Owner.Name != "Emma" {
		t.Errorf("the home alone gives %+v", cfg)
	}
	if again, _ := OnlyInEnvironment(home, getenv); len(again) != 0 {
		t.Errorf("still only in the environment: %v", again)
	}
	b, _ := os.ReadFile(filepath.Join(home, FileName))
	for _, secret := range []string{"123:secret", "sk-shell", "gsecret"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("config.yaml holds a secret:\n%s", b)
		}
	}
	if !strings.Contains(string(b), "# my settings") || !strings.Contains(string(b), "# that is me") {
		t.Errorf("config.yaml lost its comments:\n%s", b)
	}
	for _, f := range []string{"telegram-token", "llm-api-key", "google-client-secret", FileName} {
		fi, err := os.Stat(filepath.Join(home, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}
}
