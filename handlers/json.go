package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/overtake/overtake/queue"
)

// HandleJSON registers fn for tasks of type typ whose payload is the JSON
// encoding of a T (see NewJSONTask). A payload that does not decode into a T
// fails without calling fn, with an error that matches ErrMalformedPayload
// and ErrSkipRetry: a malformed payload is dead-lettered at once with the
// decoder's message as the reason. HandleJSON panics like Mux.Handle.
func HandleJSON[T any](m *Mux, typ string, fn func(ctx context.Context, t *queue.TaskInfo, args T) error) {
	if fn == nil {
		panic(fmt.Sprintf("handlers: nil handler for type %q", typ))
	}
	m.Handle(typ, HandlerFunc(func(ctx context.Context, t *queue.TaskInfo) error {
		var args T
		if err := json.Unmarshal(t.Payload, &args); err != nil {
			return SkipRetry(fmt.Errorf("%w for type %q: %w", ErrMalformedPayload, t.Type, err))
		}
		return fn(ctx, t, args)
	}))
}

// NewJSONTask returns a task of type typ whose payload is the JSON encoding
// of args, for handlers registered with HandleJSON. Like queue.NewTask, the
// task is at level 0 with the default options.
func NewJSONTask(typ string, args any) (*queue.Task, error) {
	payload, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("handlers: encode %q payload: %w", typ, err)
	}
	return queue.NewTask(typ, payload), nil
}
