// Package testutil holds helpers shared by the tests of several packages.
package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedData returns the path of rel inside ../shared/data (next to the
// repository), skipping the test with a clear message when it is absent.
func SharedData(t testing.TB, rel string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Skipf("shared test data: %v", err)
	}
	p := filepath.Join(root, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data %s is absent (%v): this test needs ../shared/data next to the repository", rel, err)
	}
	return p
}

// repoRoot finds the directory holding go.mod, from the test's directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
