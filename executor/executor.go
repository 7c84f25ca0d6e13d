// Package executor performs approved proposals: the Gmail, Calendar,
// GitHub and standing-rule executors live beside this registry, which maps
// each proposal kind to the one executor allowed to carry it out. Each
// executor names the kinds it carries out, so the mapping is here and
// nowhere else.
package executor

import (
	"fmt"
	"sort"
	"sync"

	"github.com/omnibrain/omnibrain/approval"
)

// Executor is an approval.Executor that names the proposal kinds it
// carries out.
type Executor interface {
	approval.Executor
	Kinds() []approval.Kind
}

// Registry maps proposal kinds to executors. The approval gate asks it for
// the executor of an approved proposal; nothing else calls executors.
// It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	byKind map[approval.Kind]approval.Executor
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byKind: map[approval.Kind]approval.Executor{}}
}

// Register makes ex the executor of the kinds it names. A kind has one
// executor: registering it twice is a wiring mistake and an error.
func (r *Registry) Register(ex Executor) error {
	if ex == nil {
		return fmt.Errorf("executor: register needs an executor")
	}
	kinds := ex.Kinds()
	if len(kinds) == 0 {
		return fmt.Errorf("executor: %T names no kind it executes", ex)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range kinds {
		if _, dup := r.byKind[k]; dup {
			return fmt.Errorf("executor: kind %s already has an executor", k)
		}
	}
	for _, k := range kinds {
		r.byKind[k] = ex
	}
	return nil
}

// Executor returns the executor of kind (approval.Executors).
func (r *Registry) Executor(kind approval.Kind) (approval.Executor, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ex, ok := r.byKind[kind]
	return ex, ok
}

// Kinds lists the kinds that can be executed, sorted.
func (r *Registry) Kinds() []approval.Kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]approval.Kind, 0, len(r.byKind))
	for k := range r.byKind {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
