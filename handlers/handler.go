package handlers

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/overtake/overtake/queue"
)

// Handler processes one task. ProcessTask returns nil when the task is done;
// any error steers what happens next (see the package documentation). t is
// the task's record as leased (type, payload, attempts, checkpoint, ...);
// it is read-only, and the handler must not keep it after returning.
//
// ProcessTask must respect ctx: when it is cancelled, with the cause
// ErrPreempted or ErrShutdown, the handler should save its checkpoint and
// return. Go cannot stop a goroutine, so a handler that ignores cancellation
// keeps its slot until it returns.
type Handler interface {
	ProcessTask(ctx context.Context, t *queue.TaskInfo) error
}

// HandlerFunc adapts an ordinary function to a Handler.
type HandlerFunc func(ctx context.Context, t *queue.TaskInfo) error

// ProcessTask calls f(ctx, t).
func (f HandlerFunc) ProcessTask(ctx context.Context, t *queue.TaskInfo) error {
	return f(ctx, t)
}

// Middleware wraps a Handler with behaviour of its own: logging, tracing,
// metrics, recovering panics. It usually calls next.ProcessTask.
type Middleware func(next Handler) Handler

// PanicError is the error a handler's panic is turned into by recoverPanic
// and Recover. It is retried like any failed attempt; its message, which
// becomes the task's last error or dead-letter reason, names the panic value.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic (runtime/debug.Stack).
	Stack []byte
}

// Error returns "panic: " followed by the panic value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v", e.Value)
}

// Unwrap returns the panic value if it is an error, so errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recoverPanic calls fn and returns its error. If fn panics, recoverPanic
// recovers and returns a *PanicError with the panic value and the stack
// instead. The runtime calls every handler through it, so a panic never
// crashes the worker; handlers need not use it themselves.
func recoverPanic(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Recover returns a middleware that converts a panic in the wrapped handler
// into a *PanicError, as recoverPanic does. The runtime recovers panics
// anyway; use Recover when a Mux is used on its own or when an outer
// middleware should see the panic as an error.
func Recover() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *queue.TaskInfo) error {
			return recoverPanic(func() error { return next.ProcessTask(ctx, t) })
		})
	}
}
