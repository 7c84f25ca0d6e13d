package main

import (
	"strings"
	"testing"
)

// "nothing found" names the filters that were applied, so a narrow
// --source does not read as "these words match nothing".
func TestSearchNothingFoundNamesFilters(t *testing.T) {
	env := map[string]string{"OMNIBRAIN_HOME": t.TempDir(), "OMNIBRAIN_LLM_PROVIDER": "none"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"search", "gas"}, "nothing found for \"gas\"\n"},
		{[]string{"search", "gas", "--source", "github"}, "nothing found for \"gas\" with --source github\n"},
		{[]string{"search", "--person", "bob", "--since", "2001-01-01", "gas"}, "nothing found for \"gas\" with --person bob, --since 2001-01-01\n"},
	}
	for _, tc := range tests {
		if out, err := runInProcess(t, env, tc.args...); err != nil || !strings.HasSuffix(out, tc.want) {
			t.Errorf("%v: %v\n%q, want %q", tc.args, err, out, tc.want)
		}
	}
}
