package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how SharedData ended the test.
type recorder struct {
	testing.TB
	how, msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.how, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.how, r.msg = "fail", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// sharedData runs SharedData as a test would, on its own goroutine.
func sharedData(t *testing.T, rel string) (path string, r *recorder) {
	r = &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = SharedData(r, rel)
	}()
	<-done
	return path, r
}

func TestSharedDataMissing(t *testing.T) {
	for _, tt := range []struct {
		ci, want string
	}{
		{"", "skip"},
		{"false", "skip"},
		{"true", "fail"},
		{"1", "fail"},
	} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			_, r := sharedData(t, "no/such/data-set")
			if r.how != tt.want || !strings.Contains(r.msg, "no/such/data-set") || !strings.Contains(r.msg, "../shared/data") {
				t.Errorf("SharedData of missing data: %s %q, want %s naming the path", r.how, r.msg, tt.want)
			}
		})
	}
}

func TestSharedDataPresent(t *testing.T) {
	path := SharedData(t, "") // skips, or fails in CI, without the data
	if !strings.HasSuffix(path, "/shared/data") {
		t.Errorf("SharedData = %q, want the shared/data directory", path)
	}
}
