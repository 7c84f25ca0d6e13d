package telegram

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

// LoadSpec reads the Bot API specification in
// ../shared/data/protocol/telegram-bot-api.json (skipping the test when it
// is absent) and returns method -> parameter -> required.
func LoadSpec(t testing.TB) map[string]map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(testutil.SharedData(t, "protocol/telegram-bot-api.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Methods map[string]struct {
			Fields []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"fields"`
		} `json:"methods"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("telegram-bot-api.json: %v", err)
	}
	out := map[string]map[string]bool{}
	for name, m := range s.Methods {
		out[name] = map[string]bool{}
		for _, f := range m.Fields {
			out[name][f.Name] = f.Required
		}
	}
	return out
}
