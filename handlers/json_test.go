package handlers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

type resizeArgs struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func TestHandleJSON(t *testing.T) {
	t.Parallel()
	var got []resizeArgs
	mux := handlers.NewMux()
	handlers.HandleJSON(mux, "resize", func(_ context.Context, task *queue.TaskInfo, args resizeArgs) error {
		assert.Equal(t, "resize", task.Type)
		got = append(got, args)
		return nil
	})

	good, err := handlers.NewJSONTask("resize", resizeArgs{Image: "a.png", Width: 64})
	require.NoError(t, err)
	assert.Equal(t, "resize", good.Type())
	assert.JSONEq(t, `{"image":"a.png","width":64}`, string(good.Payload()))

	tests := []struct {
		name    string
		payload []byte
		wantErr string
	}{
		{"good", good.Payload(), ""},
		{"unknown field ignored", []byte(`{"image":"b.png","extra":1}`), ""},
		{"not json", []byte(`{image`), `overtake: malformed payload for type "resize": invalid character 'i' looking for beginning of object key string`},
		{"wrong type", []byte(`{"width":"wide"}`), `overtake: malformed payload for type "resize": json: cannot unmarshal string into Go struct field resizeArgs.width of type int`},
		{"empty", nil, `overtake: malformed payload for type "resize": unexpected end of JSON input`},
	}
	for _, tt := range tests {
		err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "resize", Payload: tt.payload})
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.name)
			continue
		}
		assert.EqualError(t, err, tt.wantErr, tt.name)
		assert.ErrorIs(t, err, handlers.ErrMalformedPayload, tt.name)
		assert.ErrorIs(t, err, handlers.ErrSkipRetry, tt.name)
		assert.ErrorIs(t, err, handlers.ErrSkipRetry, tt.name) // dead-lettered, not retried
	}
	assert.Equal(t, []resizeArgs{{Image: "a.png", Width: 64}, {Image: "b.png"}}, got)
}

func TestHandleJSONNil(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, `handlers: nil handler for type "x"`, func() {
		handlers.HandleJSON[resizeArgs](handlers.NewMux(), "x", nil)
	})
}

func TestNewJSONTaskError(t *testing.T) {
	t.Parallel()
	task, err := handlers.NewJSONTask("bad", make(chan int))
	assert.Nil(t, task)
	assert.ErrorContains(t, err, `handlers: encode "bad" payload: json: unsupported type`)
}
