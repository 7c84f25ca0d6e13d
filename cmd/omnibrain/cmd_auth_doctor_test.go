package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/google"
)

func googleChecks(res []checkResult) (g, scopes []checkResult) {
	for _, r := range res {
		switch r.Name {
		case "google":
			g = append(g, r)
		case "scope":
			scopes = append(scopes, r)
		}
	}
	return g, scopes
}

func TestDoctorExplainsGoogle(t *testing.T) {
	client := map[string]string{"OMNIBRAIN_GOOGLE_CLIENT_ID": "id.apps.googleusercontent.com", "OMNIBRAIN_GOOGLE_CLIENT_SECRET": "shh"}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name        string
		env         map[string]string
		token       string // the token file, "" for none
		status      string // of the first google check
		has         string // in its detail or fix
		testingNote bool
	}{
		{name: "nothing configured", status: "info", has: "OMNIBRAIN_GOOGLE_CREDENTIALS"},
		{name: "client but no token", env: client, status: "info", has: "omnibrain auth google --token-file", testingNote: true},
		{name: "authorized", env: client, token: `{"access_token":"ya29.secret-a","refresh_token":"1//secret-r","expiry":"` + future + `"}`, status: "ok", has: "renewed automatically", testingNote: true},
		{name: "imported with its own client", token: `{"token":"ya29.secret-a","refresh_token":"1//secret-r","client_id":"c","client_secret":"s","expiry":"` + past + `"}`, status: "ok", has: "authorized", testingNote: true},
		{name: "no client to renew with", token: `{"access_token":"ya29.secret-a","refresh_token":"1//secret-r","expiry":"` + past + `"}`, status: "fail", has: "OMNIBRAIN_GOOGLE_CREDENTIALS", testingNote: true},
		{name: "expired without refresh token", env: client, token: `{"access_token":"ya29.secret-a","expiry":"` + past + `"}`, status: "fail", has: "omnibrain auth google", testingNote: true},
		{name: "no refresh token yet valid", env: client, token: `{"access_token":"ya29.secret-a","expiry":"` + future + `"}`, status: "warn", has: "no refresh token", testingNote: true},
		// Times are in the owner's timezone, not the machine's.
		{name: "expiry in the owner's timezone", env: map[string]string{"OMNIBRAIN_GOOGLE_CLIENT_ID": "id", "OMNIBRAIN_GOOGLE_CLIENT_SECRET": "shh", "OMNIBRAIN_TIMEZONE": "Pacific/Chatham"},
			token: `{"access_token":"ya29.secret-a","expiry":"2099-01-05T10:00:00Z"}`, status: "warn", has: "expires at 2099-01-05 23:45 +1345", testingNote: true},
		{name: "not a token", env: client, token: `{"hello":"world"}`, status: "fail", has: "omnibrain auth google", testingNote: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "h")
			os.Mkdir(home, 0o700)
			if tc.token != "" {
				if err := os.WriteFile(filepath.Join(home, google.TokenFileName), []byte(tc.token), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			res, err := doctorResults(t, home, tc.env)
			if (err != nil) != (tc.status == "fail") {
				t.Errorf("doctor error = %v with google status %s", err, tc.status)
			}
			g, scopes := googleChecks(res)
			if len(g) == 0 || g[0].Status != tc.status || !strings.Contains(g[0].Detail+g[0].Fix, tc.has) {
				t.Fatalf("google checks = %+v; want the first %s mentioning %q", g, tc.status, tc.has)
			}
			var note bool
			for _, r := range g {
				note = note || strings.Contains(r.Detail, "expire after 7 days")
			}
			if note != tc.testingNote {
				t.Errorf("testing-app note shown %v, want %v: %+v", note, tc.testingNote, g)
			}
			// Every scope asked for is explained, and only those.
			want := google.Scopes()
			if len(scopes) != len(want) {
				t.Fatalf("scope checks = %+v, want %d", scopes, len(want))
			}
			for i, s := range want {
				if !strings.HasPrefix(scopes[i].Detail, s.Name+": ") || !strings.Contains(scopes[i].Detail, s.Why) {
					t.Errorf("scope %d = %q, want %s explained", i, scopes[i].Detail, s.Name)
				}
			}
			out, _ := runInProcess(t, tc.env, "--home", home, "doctor")
			if strings.Contains(out, "secret-a") || strings.Contains(out, "secret-r") {
				t.Errorf("doctor printed the token:\n%s", out)
			}
		})
	}
}
