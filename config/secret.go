package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Secret holds a credential. Every way of printing it (fmt, slog, JSON)
// yields "[redacted]"; only Reveal returns the value.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value, for the one place that must send it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret has a value.
func (s Secret) IsSet() bool { return s != "" }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return s.String() }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON never writes the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// ReadSecretFile reads a secret from a file that must not be readable by
// group or others, so a token never sits in a world-readable file.
func ReadSecretFile(path string) (Secret, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	if err := CheckPrivate(path, fi.Mode()); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	return Secret(strings.TrimSpace(string(b))), nil
}

// CheckPrivate returns an error with a fix-it hint when mode lets group or
// others read the file.
func CheckPrivate(path string, mode os.FileMode) error {
	if mode.Perm()&0o077 != 0 {
		return fmt.Errorf("%s is accessible by other users (mode %04o): it holds a secret; run: chmod 600 %s", path, mode.Perm(), path)
	}
	return nil
}

// WriteSecretFile writes data to path with mode 0600, replacing the file
// atomically so a crash never leaves half a token behind. Every private
// file omnibrain rewrites (tokens, plugin pins, MEMORY.md) goes through it.
func WriteSecretFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	// The rename is durable only once the directory is: a refreshed OAuth
	// token lost to a power cut would leave the old, revoked one behind.
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("write secret: sync %s: %w", filepath.Dir(path), err)
	}
	return nil
}
