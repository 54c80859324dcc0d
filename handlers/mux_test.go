package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// record returns a handler that appends name to *log and returns err.
func record(log *[]string, name string, err error) handlers.HandlerFunc {
	return func(context.Context, *queue.TaskInfo) error {
		*log = append(*log, name)
		return err
	}
}

func TestMuxDispatch(t *testing.T) {
	t.Parallel()
	errB := errors.New("b failed")
	var log []string
	mux := handlers.NewMux()
	mux.Handle("a", record(&log, "a", nil))
	mux.HandleFunc("b", record(&log, "b", errB))
	mux.Handle("a:sub", record(&log, "a:sub", nil))

	tests := []struct {
		typ     string
		wantLog string
		wantErr error
	}{
		{typ: "a", wantLog: "a"},
		{typ: "b", wantLog: "b", wantErr: errB},
		{typ: "a:sub", wantLog: "a:sub"},
		{typ: "a:other", wantErr: handlers.ErrNoHandler}, // exact match only, no prefixes
		{typ: "", wantErr: handlers.ErrNoHandler},
	}
	for _, tt := range tests {
		log = nil
		err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: tt.typ})
		assert.ErrorIs(t, err, tt.wantErr, tt.typ)
		if tt.wantErr == nil {
			assert.NoError(t, err, tt.typ)
		}
		assert.Equal(t, tt.wantLog, strings.Join(log, ","), tt.typ)
	}
}

func TestMuxUnknownType(t *testing.T) {
	t.Parallel()
	err := handlers.NewMux().ProcessTask(context.Background(), &queue.TaskInfo{Type: "email"})
	require.Error(t, err)
	assert.Equal(t, `no handler for type "email"`, err.Error())
	assert.ErrorIs(t, err, handlers.ErrNoHandler)
	assert.ErrorIs(t, err, handlers.ErrSkipRetry)
	var nh *handlers.NoHandlerError
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, "email", nh.Type)
	assert.ErrorIs(t, err, handlers.ErrSkipRetry) // dead-lettered, not retried
}

func TestMuxNilTask(t *testing.T) {
	t.Parallel()
	err := handlers.NewMux().ProcessTask(context.Background(), nil)
	assert.ErrorIs(t, err, queue.ErrInvalidTask)
	assert.ErrorIs(t, err, handlers.ErrSkipRetry)
}

func TestMuxMiddlewareOrder(t *testing.T) {
	t.Parallel()
	var log []string
	mw := func(name string) handlers.Middleware {
		return func(next handlers.Handler) handlers.Handler {
			return handlers.HandlerFunc(func(ctx context.Context, task *queue.TaskInfo) error {
				log = append(log, name+">")
				err := next.ProcessTask(ctx, task)
				log = append(log, "<"+name)
				return err
			})
		}
	}
	var mux handlers.Mux // the zero value is usable
	mux.Use(mw("outer"), mw("middle"))
	mux.Use(mw("inner"))
	mux.Handle("x", record(&log, "x", nil))

	require.NoError(t, mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "x"}))
	assert.Equal(t, "outer>,middle>,inner>,x,<inner,<middle,<outer", strings.Join(log, ","))

	// Middleware also wraps the fallback for unknown types.
	log = nil
	require.ErrorIs(t, mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "y"}), handlers.ErrNoHandler)
	assert.Equal(t, "outer>,middle>,inner>,<inner,<middle,<outer", strings.Join(log, ","))
}

func TestMuxRegistrationPanics(t *testing.T) {
	t.Parallel()
	ok := handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error { return nil })
	tests := []struct {
		name string
		fn   func(m *handlers.Mux)
		msg  string
	}{
		{"duplicate", func(m *handlers.Mux) { m.Handle("a", ok) }, `handlers: multiple registrations for type "a"`},
		{"duplicate func", func(m *handlers.Mux) { m.HandleFunc("a", ok) }, `handlers: multiple registrations for type "a"`},
		{"empty type", func(m *handlers.Mux) { m.Handle(" ", ok) }, "handlers: empty task type"},
		{"nil handler", func(m *handlers.Mux) { m.Handle("b", nil) }, `handlers: nil handler for type "b"`},
		{"nil func", func(m *handlers.Mux) { m.HandleFunc("b", nil) }, `handlers: nil handler for type "b"`},
		{"nil middleware", func(m *handlers.Mux) { m.Use(nil) }, "handlers: nil middleware"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mux := handlers.NewMux()
			mux.Handle("a", ok)
			assert.PanicsWithValue(t, tt.msg, func() { tt.fn(mux) })
		})
	}
}

func TestMuxTypes(t *testing.T) {
	t.Parallel()
	mux := handlers.NewMux()
	assert.Empty(t, mux.Types())
	for _, typ := range []string{"c", "a", "b"} {
		mux.HandleFunc(typ, func(context.Context, *queue.TaskInfo) error { return nil })
	}
	assert.Equal(t, []string{"a", "b", "c"}, mux.Types())
}

func TestMuxConcurrent(t *testing.T) {
	t.Parallel()
	mux := handlers.NewMux()
	var wg sync.WaitGroup
	for i := range 8 {
		typ := fmt.Sprintf("t%d", i)
		wg.Go(func() {
			mux.HandleFunc(typ, func(context.Context, *queue.TaskInfo) error { return nil })
		})
		wg.Go(func() {
			_ = mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: typ})
			_ = mux.Types()
		})
	}
	wg.Wait()
	assert.Len(t, mux.Types(), 8)
	for i := range 8 {
		assert.NoError(t, mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: fmt.Sprintf("t%d", i)}))
	}
}
