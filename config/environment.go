package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// EnvSetting is one of the contract's OMNIBRAIN_* variables: what part of
// the configuration it sets, and where the home keeps that part for a
// process that does not have the variable (a service the system starts
// sees only OMNIBRAIN_HOME).
type EnvSetting struct {
	Name string // OMNIBRAIN_TELEGRAM_TOKEN
	Key  string // its config.yaml key: telegram.token_file for a secret kept in a file
	File string // a secret's file in the home, written 0600; "" for a value kept in config.yaml

	value func(*Config) string
}

// Secret reports whether the setting is a secret (kept out of config.yaml).
func (s EnvSetting) Secret() bool { return s.File != "" }

var envSettings = []EnvSetting{
	{Name: "OMNIBRAIN_TIMEZONE", Key: "timezone", value: func(c *Config) string { return c.Timezone }},
	{Name: "OMNIBRAIN_LOG_LEVEL", Key: "log_level", value: func(c *Config) string { return c.LogLevel }},
	{Name: "OMNIBRAIN_API_LISTEN", Key: "api.listen", value: func(c *Config) string { return c.API.Listen }},
	{Name: "OMNIBRAIN_TELEGRAM_TOKEN", Key: "telegram.token_file", File: "telegram-token", value: func(c *Config) string { return c.Telegram.Token.Reveal() }},
	{Name: "OMNIBRAIN_TELEGRAM_API_URL", Key: "telegram.api_url", value: func(c *Config) string { return c.Telegram.APIURL }},
	{Name: "OMNIBRAIN_TELEGRAM_OWNER_ID", Key: "telegram.owner_id", value: func(c *Config) string { return strconv.FormatInt(c.Telegram.OwnerID, 10) }},
	{Name: "OMNIBRAIN_GOOGLE_API_URL", Key: "google.api_url", value: func(c *Config) string { return c.Google.APIURL }},
	{Name: "OMNIBRAIN_GOOGLE_TOKEN_URL", Key: "google.token_url", value: func(c *Config) string { return c.Google.TokenURL }},
	{Name: "OMNIBRAIN_GOOGLE_AUTH_URL", Key: "google.auth_url", value: func(c *Config) string { return c.Google.AuthURL }},
	{Name: "OMNIBRAIN_GOOGLE_CLIENT_ID", Key: "google.client_id", value: func(c *Config) string { return c.Google.ClientID }},
	{Name: "OMNIBRAIN_GOOGLE_CLIENT_SECRET", Key: "google.client_secret_file", File: "google-client-secret", value: func(c *Config) string { return c.Google.ClientSecret.Reveal() }},
	{Name: "OMNIBRAIN_GOOGLE_CREDENTIALS", Key: "google.credentials", value: func(c *Config) string { return c.Google.Credentials }},
	{Name: "OMNIBRAIN_GITHUB_TOKEN", Key: "github.token_file", File: GitHubTokenFile, value: func(c *Config) string { return c.GitHub.Token.Reveal() }},
	{Name: "OMNIBRAIN_GITHUB_API_URL", Key: "github.api_url", value: func(c *Config) string { return c.GitHub.APIURL }},
	{Name: "OMNIBRAIN_LLM_PROVIDER", Key: "llm.provider", value: func(c *Config) string { return c.LLM.Provider }},
	{Name: "OMNIBRAIN_LLM_BASE_URL", Key: "llm.base_url", value: func(c *Config) string { return c.LLM.BaseURL }},
	{Name: "OMNIBRAIN_LLM_API_KEY", Key: "llm.api_key_file", File: "llm-api-key", value: func(c *Config) string { return c.LLM.APIKey.Reveal() }},
	{Name: "OMNIBRAIN_LLM_MODEL", Key: "llm.model", value: func(c *Config) string { return c.LLM.Model }},
	{Name: "OMNIBRAIN_EMBEDDER", Key: "embedder.provider", value: func(c *Config) string { return c.Embedder.Provider }},
	{Name: "OMNIBRAIN_EMBEDDER_BASE_URL", Key: "embedder.base_url", value: func(c *Config) string { return c.Embedder.BaseURL }},
	{Name: "OMNIBRAIN_EMBEDDER_MODEL", Key: "embedder.model", value: func(c *Config) string { return c.Embedder.Model }},
	{Name: "OMNIBRAIN_SEND_DELAY", Key: "approval.send_delay", value: func(c *Config) string { return c.Approval.SendDelay.String() }},
}

// EnvSettings lists the OMNIBRAIN_* variables that set a configuration
// key (OMNIBRAIN_HOME, which picks the home, is not one of them).
func EnvSettings() []EnvSetting { return slices.Clone(envSettings) }

// OnlyInEnvironment lists the variables getenv sets whose values the
// home's own configuration (config.yaml and its secret files) does not
// give: a service started by the system, which sees only OMNIBRAIN_HOME,
// would run without them.
func OnlyInEnvironment(home string, getenv func(string) string) ([]EnvSetting, error) {
	own, err := Load(home, func(string) string { return "" }, Flags{})
	if err != nil {
		return nil, err
	}
	shell, err := Load(home, getenv, Flags{})
	if err != nil {
		return nil, err
	}
	var out []EnvSetting
	for _, s := range envSettings {
		if getenv(s.Name) != "" && s.value(shell) != s.value(own) {
			out = append(out, s)
		}
	}
	return out, nil
}

// SaveEnvironment writes the settings' values as getenv has them into the
// home, so every process of it sees them: secrets into their own files
// (0600) named in config.yaml, the rest into config.yaml (kept 0600), its
// comments and other keys untouched.
func SaveEnvironment(home string, getenv func(string) string, settings []EnvSetting) error {
	shell, err := Load(home, getenv, Flags{})
	if err != nil {
		return err
	}
	path := filepath.Join(home, FileName)
	var doc yaml.Node
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("save settings: %w", err)
	default:
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("save settings: %s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	for _, s := range settings {
		value := s.value(shell)
		if s.Secret() {
			if err := WriteSecretFile(filepath.Join(home, s.File), []byte(value+"\n")); err != nil {
				return fmt.Errorf("save %s: %w", s.Name, err)
			}
			value = s.File
		}
		setKey(doc.Content[0], strings.Split(s.Key, "."), value)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	if err := EnsureHome(home); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save settings: %w", err)
	}
	return nil
}

// setKey sets path (a.b.c) in a YAML mapping to a scalar, making the
// mappings on the way.
func setKey(m *yaml.Node, path []string, value string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != path[0] {
			continue
		}
		if len(path) == 1 {
			m.Content[i+1] = scalar(value)
			return
		}
		if m.Content[i+1].Kind != yaml.MappingNode {
			m.Content[i+1] = &yaml.Node{Kind: yaml.MappingNode}
		}
		setKey(m.Content[i+1], path[1:], value)
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: path[0]})
	if len(path) == 1 {
		m.Content = append(m.Content, scalar(value))
		return
	}
	child := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, child)
	setKey(child, path[1:], value)
}

// scalar is a value as YAML reads it back the same: numbers stay numbers
// (an owner id), everything else is a string.
func scalar(v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		n.Tag = "!!int"
	} else {
		n.Tag = "!!str"
	}
	return n
}
