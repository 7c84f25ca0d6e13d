// Package testutil holds helpers shared by the tests of several packages.
package testutil

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// SharedData returns the path of rel inside ../shared/data (next to the
// repository). When it is absent the test is skipped with a clear message,
// except in CI (CI=true), where the data must be there: a skip would turn
// a run that tested nothing green, so it fails instead.
func SharedData(t testing.TB, rel string) string {
	t.Helper()
	missing := t.Skipf
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		missing = t.Fatalf
	}
	root, err := repoRoot()
	if err != nil {
		missing("shared test data: %v", err)
		return ""
	}
	p := filepath.Join(root, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		missing("shared test data %s is absent (%v): this test needs ../shared/data next to the repository", rel, err)
		return ""
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

// WaitPass calls wait — a loop's WaitPass (approval.Gate's outbox,
// notify.Queue's dispatcher) — with a deadline, and fails the test when
// the loop makes no whole pass in time.
func WaitPass(t testing.TB, loop string, wait func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := wait(ctx); err != nil {
		t.Fatalf("the %s made no pass: %v", loop, err)
	}
}
