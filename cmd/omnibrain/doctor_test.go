package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runInProcess runs the CLI in this process with an empty environment.
func runInProcess(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, nil, &out, &errOut, func(k string) string { return env[k] })
	return out.String() + errOut.String(), err
}

func doctorResults(t *testing.T, home string, env map[string]string) ([]checkResult, error) {
	t.Helper()
	out, err := runInProcess(t, env, "--home", home, "doctor", "--json")
	var res []checkResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
		t.Fatalf("doctor --json is not JSON: %v\n%s", jerr, out)
	}
	return res, err
}

func find(res []checkResult, name string) checkResult {
	for _, r := range res {
		if r.Name == name {
			return r
		}
	}
	return checkResult{}
}

func TestDoctor(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, home string)
		env      map[string]string
		wantFail bool
		check    string // the check that must carry the finding
		status   string
		fixHas   string
	}{
		{"fresh home is fine", nil, nil, false, "config", "ok", ""},
		{"leaky token file", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "google-token.json"), []byte(`{"access_token":"x"}`), 0o644)
		}, nil, true, "secrets", "fail", "chmod 600"},
		{"broken config still runs the other checks", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "config.yaml"), []byte("nonsense: true\n"), 0o600)
		}, nil, true, "config", "fail", "config.yaml"},
		{"bad value from the environment", nil, map[string]string{"OMNIBRAIN_TIMEZONE": "Mars/X"}, true, "config", "fail", "correct the variable or flag named above"},
		{"cloud model without key", nil, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "anthropic"}, true, "llm", "fail", "OMNIBRAIN_LLM_API_KEY"},
		{"cloud model without a model name", nil, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "openai", "OMNIBRAIN_LLM_API_KEY": "sk-test"}, true, "llm", "fail", "OMNIBRAIN_LLM_MODEL"},
		{"cloud model complete", nil, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "openai", "OMNIBRAIN_LLM_API_KEY": "sk-test", "OMNIBRAIN_LLM_MODEL": "gpt-4o-mini"}, false, "llm", "ok", "openai gpt-4o-mini"},
		{"home readable by others", func(t *testing.T, home string) { os.Chmod(home, 0o755) }, nil, false, "home", "warn", "chmod 700"},
		{"a budget and a model without a price", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "config.yaml"), []byte("llm:\n  daily_budget_usd: 2\n  prices:\n    gpt-4o-mini: {input_per_mtok: 0.15, output_per_mtok: 0.6}\n"), 0o600)
		}, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "openai", "OMNIBRAIN_LLM_API_KEY": "sk-test", "OMNIBRAIN_LLM_MODEL": "gtp-4o-mini"}, false, "budget", "warn", "llm.prices.gtp-4o-mini"},
		{"a hosted model the built-in table prices", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "config.yaml"), []byte("llm:\n  daily_budget_usd: 2\n"), 0o600)
		}, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "anthropic", "OMNIBRAIN_LLM_API_KEY": "sk-test", "OMNIBRAIN_LLM_MODEL": "claude-sonnet-4-5"}, false, "budget", "", ""},
		{"a budget and a priced model", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "config.yaml"), []byte("llm:\n  daily_budget_usd: 2\n  prices:\n    gpt-4o-mini: {input_per_mtok: 0.15, output_per_mtok: 0.6}\n"), 0o600)
		}, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "openai", "OMNIBRAIN_LLM_API_KEY": "sk-test", "OMNIBRAIN_LLM_MODEL": "gpt-4o-mini"}, false, "budget", "", ""},
		{"an unpriced model on loopback costs nothing", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "config.yaml"), []byte("llm:\n  daily_budget_usd: 2\n"), 0o600)
		}, map[string]string{"OMNIBRAIN_LLM_PROVIDER": "openai", "OMNIBRAIN_LLM_BASE_URL": "http://127.0.0.1:8080/v1", "OMNIBRAIN_LLM_MODEL": "llama"}, false, "budget", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "h")
			os.Mkdir(home, 0o700)
			if tc.setup != nil {
				tc.setup(t, home)
			}
			res, err := doctorResults(t, home, tc.env)
			if (err != nil) != tc.wantFail {
				t.Fatalf("doctor error = %v, want failure %v; results %+v", err, tc.wantFail, res)
			}
			r := find(res, tc.check)
			if r.Status != tc.status || !strings.Contains(r.Fix+r.Detail, tc.fixHas) {
				t.Fatalf("check %s = %+v; want status %s mentioning %q", tc.check, r, tc.status, tc.fixHas)
			}
			// Whatever fails, the database and daemon checks still ran.
			if find(res, "database").Name == "" || find(res, "daemon").Name == "" {
				t.Fatalf("doctor stopped early: %+v", res)
			}
		})
	}
}

// With a daemon running, doctor reports what its health model says: a
// component that is down fails the check, with the component's own fix.
func TestDoctorReportsTheDaemonsHealth(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
	}))
	defer refusing.Close()
	home := t.TempDir()
	startDaemon(t, home, "OMNIBRAIN_GITHUB_TOKEN=ghp_revoked0123456789", "OMNIBRAIN_GITHUB_API_URL="+refusing.URL)

	res, err := doctorResults(t, home, nil)
	if d := find(res, "daemon"); d.Status != "ok" || !strings.Contains(d.Detail, "pid") {
		t.Fatalf("daemon check = %+v (doctor error %v)", d, err)
	}
	if _, _, code := runCLI(t, home, "collect", "github"); code == 0 {
		t.Fatal("collect github succeeded against a server refusing the token")
	}
	res, err = doctorResults(t, home, nil)
	if err == nil {
		t.Fatal("doctor passed with a component down")
	}
	var gh checkResult
	for _, r := range res {
		if r.Name == "github" && r.Status == "fail" {
			gh = r
		}
	}
	if !strings.Contains(gh.Detail, "down") || !strings.Contains(gh.Fix, "omnibrain auth github") {
		t.Fatalf("github component check = %+v; want a failure with the fix; all: %+v", gh, res)
	}
}
