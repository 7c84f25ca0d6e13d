package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/store"
)

// A CLI call on a fresh home whose database another process holds locked
// (a daemon starting at the same moment) waits for the lock instead of
// dying of "database is locked".
func TestFreshHomeWaitsForTheDatabaseLock(t *testing.T) {
	home := t.TempDir()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(home, store.FileName)+"?_txlock=exclusive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE holder (x)`); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(binary(t), "--home", home, "status", "--json")
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "locked by another omnibrain process; waiting") {
			break
		}
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "waiting") {
		t.Fatalf("status did not say it waits for the lock; stderr:\n%s", strings.Join(lines, "\n"))
	}
	// It waited: now the other process is done.
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	go func() {
		for sc.Scan() {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("status after the lock was released: %v\n%s", err, strings.Join(lines, "\n"))
	}
	var st api.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Home != home {
		t.Fatalf("status --json = %v %q", err, out.String())
	}
}

// runCLIEnv is runCLI with extra environment variables.
func runCLIEnv(t *testing.T, home string, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), append([]string{"--home", home}, args...)...)
	cmd.Env = cleanEnv(env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}
