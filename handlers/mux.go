package handlers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/overtake/overtake/queue"
)

// Mux routes each task to the handler registered for its exact type, through
// the middleware added with Use. A Mux is itself a Handler. The zero value is
// ready to use; a Mux is safe for concurrent use.
type Mux struct {
	mu  sync.RWMutex
	m   map[string]Handler
	mws []Middleware
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	return &Mux{}
}

// Handle registers h for tasks of type typ. Like net/http, it panics when typ
// is empty, h is nil, or typ already has a handler: registration happens at
// start-up, where a mistake should stop the program.
func (m *Mux) Handle(typ string, h Handler) {
	if strings.TrimSpace(typ) == "" {
		panic("handlers: empty task type")
	}
	if h == nil {
		panic(fmt.Sprintf("handlers: nil handler for type %q", typ))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[typ]; ok {
		panic(fmt.Sprintf("handlers: multiple registrations for type %q", typ))
	}
	if m.m == nil {
		m.m = make(map[string]Handler)
	}
	m.m[typ] = h
}

// HandleFunc registers f for tasks of type typ. It panics like Handle.
func (m *Mux) HandleFunc(typ string, f func(ctx context.Context, t *queue.TaskInfo) error) {
	if f == nil {
		panic(fmt.Sprintf("handlers: nil handler for type %q", typ))
	}
	m.Handle(typ, HandlerFunc(f))
}

// Use appends middleware to the chain. The first middleware added is the
// outermost: it sees the task first and the error last. Middleware also
// wraps the fallback for unknown types, so logging middleware sees those.
func (m *Mux) Use(mws ...Middleware) {
	for _, mw := range mws {
		if mw == nil {
			panic("handlers: nil middleware")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mws = append(m.mws, mws...)
}

// Types returns the registered task types, sorted. The runtime can use it to
// check at start-up that the worker handles what producers enqueue.
func (m *Mux) Types() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	types := make([]string, 0, len(m.m))
	for typ := range m.m {
		types = append(types, typ)
	}
	slices.Sort(types)
	return types
}

// ProcessTask dispatches t to the handler registered for t.Type. For an
// unknown type it returns a *NoHandlerError, which matches both ErrNoHandler
// and ErrSkipRetry, so the task is dead-lettered at once with a clear reason.
func (m *Mux) ProcessTask(ctx context.Context, t *queue.TaskInfo) error {
	if t == nil {
		return SkipRetry(fmt.Errorf("%w: nil task", queue.ErrInvalidTask))
	}
	m.mu.RLock()
	h, ok := m.m[t.Type]
	mws := m.mws // Use only appends: the first len(mws) entries never change
	m.mu.RUnlock()
	if !ok {
		h = noHandler
	}
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h.ProcessTask(ctx, t)
}

var noHandler = HandlerFunc(func(_ context.Context, t *queue.TaskInfo) error {
	return &NoHandlerError{Type: t.Type}
})

// NoHandlerError is returned by Mux.ProcessTask for a task whose type has no
// handler. It matches ErrNoHandler and ErrSkipRetry with errors.Is.
type NoHandlerError struct {
	// Type is the task type that has no handler.
	Type string
}

// Error returns a message like `no handler for type "email"`.
func (e *NoHandlerError) Error() string {
	return fmt.Sprintf("no handler for type %q", e.Type)
}

// Is reports whether target is ErrNoHandler or ErrSkipRetry.
func (e *NoHandlerError) Is(target error) bool {
	return target == ErrNoHandler || target == ErrSkipRetry
}
