package runtime_test

import (
	"context"
	"os"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A handler logs through handlers.Logger(ctx): the runtime's logger with
// the task's fields already on it (with trace_id and span_id too when a
// tracer provider is installed).
func Example_handlerLogger() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, err := queue.New(rdb, queue.Config{Name: "billing"})
	if err != nil {
		panic(err)
	}

	// JSON lines on stdout, without timestamps so that the output below
	// stays the same; warnings and errors only.
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level",
		EncodeLevel: zapcore.LowercaseLevelEncoder})
	logger := zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stdout), zapcore.WarnLevel))

	done := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("invoice", func(ctx context.Context, t *queue.TaskInfo) error {
		defer close(done)
		handlers.Logger(ctx).Warn("customer has no email; invoice sent by post", zap.String("customer", string(t.Payload)))
		return nil
	})
	rt, err := runtime.New(q, mux, runtime.Config{WorkerID: "worker-1", Logger: logger})
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := q.Enqueue(ctx, queue.NewTask("invoice", []byte("c-42")), queue.ID("inv-1001")); err != nil {
		panic(err)
	}
	<-done
	if err := rt.Shutdown(ctx); err != nil {
		panic(err)
	}
	// Output:
	// {"level":"warn","msg":"customer has no email; invoice sent by post","queue":"billing","worker":"worker-1","task_id":"inv-1001","task_type":"invoice","task_level":0,"task_attempt":0,"customer":"c-42"}
}
