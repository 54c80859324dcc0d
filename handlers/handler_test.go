package handlers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

func TestRecoverPanic(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		fn      func() error
		wantMsg string
		panics  bool
		is      error
	}{
		{name: "no panic", fn: func() error { return nil }},
		{name: "error", fn: func() error { return boom }, wantMsg: "boom", is: boom},
		{name: "panic string", fn: func() error { panic("bad index") }, wantMsg: "panic: bad index", panics: true},
		{name: "panic error", fn: func() error { panic(boom) }, wantMsg: "panic: boom", panics: true, is: boom},
		{name: "panic nil", fn: func() error { panic(nil) }, wantMsg: "panic: panic called with nil argument", panics: true},
		{name: "runtime error", fn: func() error {
			var m map[string]int
			m["x"] = 1 //nolint:staticcheck // the runtime panic under test
			return nil
		}, wantMsg: "panic: assignment to entry in nil map", panics: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := handlers.Recover()(handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error { return tt.fn() }))
			err := h.ProcessTask(context.Background(), &queue.TaskInfo{Type: "t"})
			if tt.wantMsg == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.wantMsg)
			var pe *handlers.PanicError
			assert.Equal(t, tt.panics, errors.As(err, &pe))
			if tt.panics {
				assert.Contains(t, string(pe.Stack), "handlers_test.TestRecoverPanic")
			}
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestRecoverMiddleware(t *testing.T) {
	t.Parallel()
	mux := handlers.NewMux()
	mux.Use(handlers.Recover())
	mux.HandleFunc("crash", func(context.Context, *queue.TaskInfo) error { panic("oops") })
	err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "crash"})
	var pe *handlers.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "oops", pe.Value)
	assert.NotEmpty(t, pe.Stack)
}
