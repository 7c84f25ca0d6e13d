package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/store"
)

// maxKnowledgeFile bounds one knowledge file.
const maxKnowledgeFile = 1 << 20

// KnowledgeSource is the items' source.
const KnowledgeSource = "plugin"

// Knowledge reads the local plugins' knowledge files as items (source plugin,
// kind document, external id "<plugin>:<path>"), ready for
// store.UpsertItems. A file that cannot be read is reported and skipped.
func (m *Manager) Knowledge() ([]*store.Item, []error) {
	var items []*store.Item
	var errs []error
	for _, name := range m.Names() {
		p, ok := m.get(name)
		if !ok || p.local == nil || p.held() != nil {
			continue
		}
		man := p.local
		for _, rel := range man.Knowledge {
			it, err := man.knowledgeItem(rel)
			if err != nil {
				errs = append(errs, fmt.Errorf("plugin %s: knowledge %s: %w", man.Name, rel, err))
				continue
			}
			items = append(items, it)
		}
	}
	return items, errs
}

func (man *Manifest) knowledgeItem(rel string) (*store.Item, error) {
	path, err := man.within(rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if fi.Size() > maxKnowledgeFile {
		return nil, fmt.Errorf("%d bytes (max %d)", fi.Size(), maxKnowledgeFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	body := string(b)
	return &store.Item{
		Source: KnowledgeSource, ExternalID: man.Name + ":" + filepath.ToSlash(filepath.Clean(rel)), Kind: "document",
		Time: fi.ModTime(), Title: knowledgeTitle(body, rel), Body: body,
		Meta: map[string]any{"plugin": man.Name, "path": filepath.ToSlash(filepath.Clean(rel))},
	}, nil
}

// knowledgeTitle is the first markdown heading, else the file name.
func knowledgeTitle(body, rel string) string {
	for _, line := range strings.SplitN(body, "\n", 50) {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "#"); ok {
			if t = strings.TrimSpace(strings.TrimLeft(t, "#")); t != "" {
				return t
			}
		}
	}
	return filepath.Base(rel)
}
